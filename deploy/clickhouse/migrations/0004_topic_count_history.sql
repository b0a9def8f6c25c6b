-- Snapshots of accepted QA per category, for drift dashboards. A snapshot taken twice at the same
-- instant replaces itself: read with FINAL.
CREATE TABLE IF NOT EXISTS topic_count_history
(
    at DateTime('UTC'),
    category String,
    n UInt64
)
ENGINE = ReplacingMergeTree
ORDER BY (at, category);
