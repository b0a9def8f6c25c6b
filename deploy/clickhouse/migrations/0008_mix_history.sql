-- Every version of the training mix the sampler published, with its figures and the whole
-- MixState as JSON. Written by the sampler's step before it commits; a replayed step writes the
-- same version again and replaces it: read with FINAL.
CREATE TABLE IF NOT EXISTS mix_history
(
    version UInt32,
    at DateTime('UTC'),
    reason String,
    alpha Float64,
    items UInt64,
    held_out UInt64,
    size UInt64,
    distinct_items UInt64,
    max_min_ratio Float64,
    average_upsample Float64,
    yield Float64,
    tvd_reference Float64,
    tvd_target Float64,
    js_target Float64,
    kept Float64 DEFAULT -1,
    state String
)
ENGINE = ReplacingMergeTree
ORDER BY version;
