-- Where a QA item came from and when it was classified, for counts by source and day and for
-- held-out splits by publication date. `published` keeps the source's precision (YYYY[-MM[-DD]],
-- '' unknown); `classified_at` is the log record's timestamp, so a replay writes the same value.
ALTER TABLE qa
    ADD COLUMN source String DEFAULT '',
    ADD COLUMN journal String DEFAULT '',
    ADD COLUMN published String DEFAULT '',
    ADD COLUMN classified_at DateTime('UTC') DEFAULT toDateTime(0, 'UTC');
