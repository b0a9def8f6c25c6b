-- What an ack says of an item's rollouts (issue 44), next to its mean reward: how many, how many
-- passed (each reward clamped to [0, 1], summed) and how many of its groups were flat (every
-- rollout the same reward: no GRPO advantage). 0 for acks that sent a mean reward only.
-- No IF NOT EXISTS on ALTER ADD COLUMN before 19.x: the schema_migrations ledger keeps this from running twice.
ALTER TABLE rewards
    ADD COLUMN rollouts UInt32 DEFAULT 0,
    ADD COLUMN passes Float64 DEFAULT 0,
    ADD COLUMN flat_groups UInt32 DEFAULT 0;
