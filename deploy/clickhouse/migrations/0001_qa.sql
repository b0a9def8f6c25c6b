-- QA pairs written by the classify stage. ReplacingMergeTree keyed by id: a re-written
-- row (same id) replaces the older one at merge time; read with FINAL (or argMax on
-- inserted_at) for exact results. Valid on ClickHouse 18.16 and on current releases/chdb.
-- Tables are unqualified: start.sh creates them in `default`, the TS opener in the URL's database.
CREATE TABLE IF NOT EXISTS qa
(
    id String,
    article_id String,
    kind String,
    question String,
    answer String,
    categories Array(String),
    verdict String,
    quality Float64,
    difficulty Float64,
    mix_version UInt32 DEFAULT 0,
    inserted_at DateTime DEFAULT now()
)
ENGINE = ReplacingMergeTree(inserted_at)
ORDER BY id;
