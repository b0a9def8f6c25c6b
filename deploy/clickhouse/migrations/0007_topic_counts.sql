-- Accepted QA per category, source and day, kept up to date by a materialized view on every insert
-- into qa. Each group holds the exact set of its QA ids (uniqExactState), not a running sum: a row
-- written again by a replay or a restarted sink adds an id already in the set, so nothing is
-- counted twice whether or not the qa table has merged yet. (Insert deduplication tokens would
-- need a replicated table or non_replicated_deduplication_window, which 18.16 lacks, and a replayed
-- batch need not have the same rows as the first.) An id is counted under each category, source
-- and day it was ever accepted with; the pipeline never rewrites an id with other labels (ids hash
-- the content; classification replies are journaled), and qa FINAL stays the place to read the
-- latest version of each row.
CREATE TABLE IF NOT EXISTS topic_counts
(
    category String,
    source String,
    day Date,
    items AggregateFunction(uniqExact, String)
)
ENGINE = AggregatingMergeTree
ORDER BY (category, source, day);

CREATE MATERIALIZED VIEW IF NOT EXISTS topic_counts_mv TO topic_counts AS
SELECT category, source, toDate(classified_at) AS day, uniqExactState(id) AS items
FROM qa
ARRAY JOIN arrayDistinct(categories) AS category
WHERE verdict = 'accept'
GROUP BY category, source, day;

-- Rows written before this migration.
INSERT INTO topic_counts
SELECT category, source, toDate(classified_at) AS day, uniqExactState(id) AS items
FROM qa
ARRAY JOIN arrayDistinct(categories) AS category
WHERE verdict = 'accept'
GROUP BY category, source, day;
