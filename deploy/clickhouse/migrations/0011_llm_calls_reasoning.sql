-- Of a call's output tokens, those the model spent thinking (issue 42: reasoning models): what
-- turning thinking off, or a lower reasoning_effort, would save. 0 for calls without reasoning.
-- No IF NOT EXISTS on ALTER ADD COLUMN before 19.x: the schema_migrations ledger keeps this from running twice.
ALTER TABLE llm_calls
    ADD COLUMN reasoning_tokens UInt32 DEFAULT 0;
