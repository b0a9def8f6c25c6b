-- The rest of a classified QA's grade and its model stamp, next to 0001's columns.
-- No IF NOT EXISTS on ALTER ADD COLUMN before 19.x: the schema_migrations ledger is what keeps this from running twice.
ALTER TABLE qa
    ADD COLUMN answerability Float64 DEFAULT 0,
    ADD COLUMN verifiability Float64 DEFAULT 0,
    ADD COLUMN model String DEFAULT '',
    ADD COLUMN prompt_version String DEFAULT '';
