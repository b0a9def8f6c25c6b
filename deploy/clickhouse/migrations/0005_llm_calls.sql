-- Every LLM call as accounted by the LLM layer (journal hits included, at no cost). A call id is
-- written once; a record sent twice (a retried insert) replaces itself: read with FINAL.
CREATE TABLE IF NOT EXISTS llm_calls
(
    call_id String,
    request_key String,
    stage String,
    provider String,
    model String,
    input_tokens UInt32,
    output_tokens UInt32,
    latency_ms Float64,
    cost_usd Float64,
    cached UInt8,
    attempts UInt16,
    repair UInt8,
    at DateTime
)
ENGINE = ReplacingMergeTree
ORDER BY call_id;
