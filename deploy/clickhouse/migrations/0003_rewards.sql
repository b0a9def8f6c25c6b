-- Per-item rewards carried by trainer acks. A redelivered ack (same run, QA id, step) replaces
-- the earlier row: read with FINAL.
CREATE TABLE IF NOT EXISTS rewards
(
    qa_id String,
    run String,
    step UInt32,
    reward Float64,
    mix_version UInt32 DEFAULT 0,
    recorded_at DateTime DEFAULT now()
)
ENGINE = ReplacingMergeTree(recorded_at)
ORDER BY (run, qa_id, step);
