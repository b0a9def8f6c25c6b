-- Accepted QA withdrawn from the dataset (the qa.withdrawn topic): each is a duplicate of a QA that
-- comes before it (earliest publication, then id) and reached the dedup stage after it was accepted.
-- Counts of accepted QA leave these ids out: qa keeps the row as it was classified, and
-- topic_counts keeps every id ever accepted, so readers take the withdrawn ids off (qa-store.ts).
-- A replayed insert writes the same id again: ReplacingMergeTree by id, read as a set of ids.
CREATE TABLE IF NOT EXISTS qa_withdrawn
(
    id String,
    duplicate_of String,
    inserted_at DateTime DEFAULT now()
)
ENGINE = ReplacingMergeTree(inserted_at)
ORDER BY id;
