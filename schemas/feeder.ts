import { z } from 'zod';
import { RewardKind, RolloutBatch } from './rollout-batch.js';

/** The HTTP server `run` starts next to the processors (feeder API, reward, OpenAPI document). */
export const ServerConfig = z
  .object({
    host: z.string().min(1).default('127.0.0.1'),
    port: z.number().int().min(0).max(65535).default(8787).describe('0 picks a free port'),
    bodyLimit: z.number().int().positive().default(1_048_576).describe('largest request body in bytes'),
    tokenEnv: z
      .string()
      .min(1)
      .default('BIOALCHEMY_FEEDER_TOKEN')
      .describe('environment variable holding the bearer token (required off loopback)'),
  })
  .strict();
export type ServerConfig = z.infer<typeof ServerConfig>;

export const PromptTemplates = z
  .object({
    system: z.string().nullable().default(null).describe('a system message before the question, or null'),
    mcq: z
      .string()
      .default(
        '{question}\n\n{options}\n\nThink it through, then give the letter of the correct option as \\boxed{X}.',
      )
      .describe('{question} and {options} ("A) text" lines) are replaced'),
    freeForm: z
      .string()
      .default('{question}\n\nThink it through, then give a short final answer as \\boxed{answer}.')
      .describe('{question} is replaced'),
  })
  .strict();
export type PromptTemplates = z.infer<typeof PromptTemplates>;

/** A run name: what a trainer calls itself; also a ClickHouse `rewards.run`. */
const RunName = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/,
    'a run is 1-128 of A-Z a-z 0-9 . _ : - (starting alphanumeric)',
  );

/** A pass rate, or a share of a batch: 0 to 1. */
const Rate = z.number().min(0).max(1);

/** Why band-pass sets an item aside. */
export const AsideReason = z.enum(['below-floor', 'above-ceiling']);
export type AsideReason = z.infer<typeof AsideReason>;

/** Why a planned slot was not served (band-pass, or the curriculum target), and what stood in. */
export const LeftOut = z.object({
  slot: z.number().int(),
  id: z.string().describe('the item planned for the slot'),
  reason: z.enum([...AsideReason.options, 'explore', 'target']),
  by: z
    .string()
    .describe("the item served in its place: of the slot's sampled topic, or within the topic budget"),
});
export type LeftOut = z.infer<typeof LeftOut>;

/**
 * Band-pass serving (issue 44): an item whose pass rate is at or below `floor` or at or above
 * `ceiling` after `minRollouts` rollouts teaches a GRPO trainer nothing (every rollout of its group
 * gets the same reward), so the feeder sets it aside for `cooldownSteps` trainer steps and serves
 * another item of the slot's sampled topic in its place, or, spending `topicBudget`, of another.
 */
export const BandPass = z
  .object({
    floor: Rate.default(0.1).describe('a pass rate at or below this is set aside'),
    ceiling: Rate.default(0.9).describe('a pass rate at or above this is set aside'),
    minRollouts: z
      .number()
      .min(1)
      .default(5)
      .describe('rollouts (prior pseudo-rollouts included) before an item may be set aside'),
    cooldownSteps: z
      .number()
      .int()
      .min(1)
      .default(64)
      .describe('trainer steps an item stays aside before it is served again for a re-test'),
    exploreShare: Rate.default(0.1).describe(
      'share of each batch given to items of the run not yet observed, when its topics have any',
    ),
    topicBudget: z
      .number()
      .min(0)
      .max(1)
      .default(0.02)
      .describe(
        "TVD the run's served topic shares may stray from its planned ones so that a set-aside item's slot gets a live item of another topic set; 0: every replacement keeps the plan's shares",
      ),
  })
  .strict()
  .refine((b) => b.floor < b.ceiling, { message: 'floor must be below ceiling', path: ['floor'] });
export type BandPass = z.infer<typeof BandPass>;

export const DifficultyConfig = z
  .object({
    halfLifeSteps: z
      .number()
      .positive()
      .default(50)
      .describe("trainer steps after which an observation weighs half in an item's pass rate"),
    bandPass: BandPass.nullable().default(null).describe('band-pass for every run; null: off'),
    runs: z
      .record(RunName, BandPass.nullable())
      .default({})
      .describe('band-pass of named runs, over `bandPass` (null turns it off for that run)'),
    priorWeight: z
      .number()
      .min(0)
      .default(0)
      .describe(
        "pseudo-rollouts the prior (the run's pass rate of the item's topic, grade and article) counts for; 0: none",
      ),
    target: Rate.nullable()
      .default(null)
      .describe('curriculum: among items of the same topics, serve the one whose pass rate is nearest'),
    targetProbe: z
      .number()
      .int()
      .min(1)
      .max(64)
      .default(4)
      .describe('with a target, how many items of the same topics each slot compares'),
  })
  .strict();
export type DifficultyConfig = z.infer<typeof DifficultyConfig>;

export const FeederConfig = z
  .object({
    state: z
      .string()
      .optional()
      .describe(
        'SQLite file of leases, acks and the item pool; default feeder.sqlite beside the embedded log',
      ),
    batchSize: z
      .number()
      .int()
      .min(1)
      .max(4096)
      .default(128)
      .describe('prompts per batch unless a lease asks'),
    leaseMs: z.number().int().min(100).default(600_000).describe('how long a lease lasts unless extended'),
    maxLeaseMs: z
      .number()
      .int()
      .min(100)
      .default(6 * 3_600_000),
    readyBatches: z
      .number()
      .int()
      .min(0)
      .default(2)
      .describe('batches cut ahead per rank of each active run (backpressure: no more are prepared)'),
    prefetchBatches: z
      .number()
      .int()
      .min(0)
      .max(64)
      .default(2)
      .describe(
        'unacked batches of earlier epochs a rank may hold while it leases from a later one (a loader fetching ahead across an epoch end); a lease may ask another bound',
      ),
    dataSource: z.string().min(1).default('bioalchemy'),
    ability: z.string().min(1).default('biology'),
    templates: PromptTemplates.default(PromptTemplates.parse({})),
    difficulty: DifficultyConfig.default(DifficultyConfig.parse({})).describe(
      'per-item pass rates from acks; band-pass serving and a curriculum target (issue 44)',
    ),
  })
  .strict();
export type FeederConfig = z.infer<typeof FeederConfig>;
/** A feeder config as written: every key with a default may be left out, at any depth. */
export type FeederConfigInput = z.input<typeof FeederConfig>;

export const LeaseRequest = z
  .object({
    run: RunName,
    rank: z.number().int().nonnegative(),
    worldSize: z.number().int().min(1).max(4096),
    batchSize: z
      .number()
      .int()
      .min(1)
      .max(4096)
      .optional()
      .describe(
        "the feeder's batchSize when absent; a new size takes effect at the next epoch the run plans",
      ),
    leaseMs: z.number().int().min(100).optional(),
    prefetch: z
      .number()
      .int()
      .min(0)
      .max(64)
      .optional()
      .describe('unacked batches of earlier epochs this rank may hold while leasing a later one'),
  })
  .strict()
  .refine((r) => r.rank < r.worldSize, { message: 'rank must be below worldSize', path: ['rank'] });
export type LeaseRequest = z.infer<typeof LeaseRequest>;

export const LeaseResponse = z.discriminatedUnion('status', [
  z.object({
    status: z.literal('leased'),
    leaseId: z.string(),
    slots: z
      .array(z.number().int().nonnegative())
      .describe(
        'the slot (position in the batch as cut) of each item; a redelivery carries only the slots not yet acked',
      ),
    leftOut: z
      .array(LeftOut)
      .optional()
      .describe('planned items band-pass or the curriculum target did not serve, and why (absent: none)'),
    batch: RolloutBatch,
  }),
  z.object({
    status: z.literal('wait'),
    epoch: z.number().int(),
    retryAfterMs: z.number().int().nonnegative(),
    reason: z.string(),
  }),
  z.object({
    status: z.literal('epoch-end'),
    epoch: z
      .number()
      .int()
      .describe(
        'the epoch of which this rank has no fresh batch left (it may still hold some); the next lease starts the next one',
      ),
  }),
]);
export type LeaseResponse = z.infer<typeof LeaseResponse>;

// JSON has no NaN or Infinity: a trainer's NaN arrives as a string, as null (JSON.stringify), as a
// bare NaN token (Python's json.dumps) or as 1e999 (Infinity after parsing); each but null is
// refused (null is an acked slot without a reward).
const Reward = z.number().nullable();

/**
 * The rollouts of one acked slot: each reward (`rewards`, `count` of them), or their `mean` over
 * `count`. A reward counts as a pass by its value clamped to [0, 1] (a 0/1 reward as it is).
 */
export const Rollouts = z
  .object({
    count: z.number().int().min(1).max(4096),
    rewards: z.array(z.number()).max(4096).optional(),
    mean: z.number().optional(),
  })
  .strict();
export type Rollouts = z.infer<typeof Rollouts>;

/** Who acks, extends or releases: the lease it holds on one batch. */
const LeaseRef = {
  run: RunName,
  batchId: z.string().min(1),
  leaseId: z.string().min(1),
  rank: z
    .number()
    .int()
    .nonnegative()
    .optional()
    .describe("the caller's rank: a batch of another rank is refused (other-rank)"),
};

export const AckRequest = z
  .object({
    ...LeaseRef,
    slots: z
      .array(z.number().int())
      .min(1)
      .optional()
      .describe('the slots acked (the rest stay leased); absent: every slot not yet acked, in slot order'),
    rewards: z
      .array(Reward)
      .optional()
      .describe(
        'one per slot acked (the mean over its rollouts; any finite number, stored raw), null for unscored',
      ),
    rollouts: z
      .array(Rollouts.nullable())
      .optional()
      .describe(
        "one per slot acked: its rollouts' rewards, or their mean and count (null: not rolled out); the item's pass rate follows them",
      ),
    responseLengths: z.array(z.number().int().nonnegative().nullable()).optional(),
    step: z.number().int().nonnegative().max(0xffff_ffff).optional().describe("the trainer's step"),
  })
  .strict();
export type AckRequest = z.infer<typeof AckRequest>;

export const AckResponse = z.object({
  acked: z.string(),
  items: z.number().int().describe('slots acked by this request'),
  rewards: z.number().int().describe('of them, with a reward'),
  remaining: z.number().int().describe('slots of the batch still leased (0: the batch is done)'),
});
export type AckResponse = z.infer<typeof AckResponse>;

export const ExtendRequest = z
  .object({ ...LeaseRef, leaseMs: z.number().int().min(100).optional() })
  .strict();
export type ExtendRequest = z.infer<typeof ExtendRequest>;

export const ReleaseRequest = z.object(LeaseRef).strict();
export type ReleaseRequest = z.infer<typeof ReleaseRequest>;

export const ReleaseResponse = z.object({
  released: z.string(),
  items: z.number().int().describe("slots given back (the batch's slots not yet acked)"),
});
export type ReleaseResponse = z.infer<typeof ReleaseResponse>;

export const ExtendResponse = z.object({ leaseDeadline: z.string().datetime() });

export const RankStatus = z.object({
  rank: z.number().int(),
  epoch: z.number().int(),
  leased: z.number().int(),
  acked: z.number().int(),
});

export const EpochStatus = z.object({
  epoch: z.number().int(),
  batchSize: z.number().int().describe("the epoch's batch size"),
  planned: z.number().int().describe("items (copies) in the epoch's order"),
  acked: z.number().int().describe('of them, acked'),
  rewarded: z.number().int().describe('acked with a reward'),
  redelivered: z.number().int().describe('items delivered again after a lease expired or was released'),
});
export type EpochStatus = z.infer<typeof EpochStatus>;

export const RunStatus = z.object({
  run: z.string(),
  worldSize: z.number().int(),
  batchSize: z.number().int().describe('the batch size of the epoch being cut'),
  epoch: z.number().int().describe('the epoch being cut'),
  mixVersion: z.number().int().nullable().describe('the mix version the epoch order follows'),
  planned: z.number().int().describe("items (copies) in this epoch's order"),
  cutItems: z.number().int().describe('of them, already in batches'),
  batches: z.object({
    ready: z.number().int(),
    leased: z.number().int(),
    acked: z.number().int(),
    redelivered: z.number().int().describe('leases that were second or later attempts'),
  }),
  ackedItems: z.number().int().describe('items acked over the whole run'),
  difficulty: z
    .object({
      rollouts: z.number().int().describe('rollouts acked (a slot with a mean reward only is one)'),
      flatGroups: z.number().int().describe('acked groups whose rollouts all had the same reward'),
      setAside: z.number().int().describe('times band-pass set an item aside'),
      servedAside: z
        .number()
        .int()
        .describe('times a set-aside item was cut into a batch for lack of a live item of its topics'),
    })
    .describe("what the run's acks said of its items' difficulty (issue 44)"),
  ranks: z.array(RankStatus),
  epochs: z.array(EpochStatus).describe('each epoch the run planned, oldest first'),
});
export type RunStatus = z.infer<typeof RunStatus>;

/** One item's difficulty record in one run (issue 44). */
export const ItemDifficulty = z.object({
  run: z.string(),
  id: z.string(),
  topics: z.array(z.string()),
  rollouts: z.number().int().describe('rollouts acked (a slot acked with a mean and no count is one)'),
  passes: z.number().describe('of them, passes: each reward clamped to [0, 1], summed'),
  meanReward: z.number().nullable(),
  acks: z.number().int().describe('slots acked with rollouts or a reward'),
  step: z.number().int().describe('the latest trainer step acked'),
  passRate: Rate.nullable().describe(
    'exponentially weighted by trainer step (difficulty.halfLifeSteps); null before any rollout',
  ),
  prior: Rate.describe("from the run's acks of the item's topics, grade and article"),
  rate: Rate.describe('passRate blended with the prior (difficulty.priorWeight)'),
  flatGroups: z.number().int().describe('acked groups whose rollouts all had the same reward'),
  setAside: z.number().int().describe('times band-pass set the item aside'),
  asideUntil: z.number().int().nullable().describe('set aside until this trainer step (exclusive)'),
  asideReason: AsideReason.nullable(),
  aside: z.boolean().describe("set aside as of the run's latest step"),
});
export type ItemDifficulty = z.infer<typeof ItemDifficulty>;

export const ItemDifficultyPage = z.object({
  run: z.string(),
  step: z.number().int().describe("the run's latest trainer step acked"),
  items: z.array(ItemDifficulty),
  next: z.string().nullable().describe('the `after` of the next page, or null at the end'),
});
export type ItemDifficultyPage = z.infer<typeof ItemDifficultyPage>;

export const FeederStatus = z.object({
  mixVersion: z.number().int().nullable(),
  pool: z.number().int().describe('classified QA items known'),
  selected: z.number().int().describe('copies in the current training selection'),
  runs: z.array(z.string()),
});
export type FeederStatus = z.infer<typeof FeederStatus>;

export const RewardRequestItem = z
  .object({
    kind: RewardKind,
    ground_truth: z.string().min(1),
    options: z.array(z.string()).default([]),
    aliases: z.array(z.string()).default([]),
    question: z
      .string()
      .optional()
      .describe('the question asked: only a verifier model reads it (reward.verifier), the rules never do'),
    output: z.string(),
  })
  .strict();
export type RewardRequestItem = z.infer<typeof RewardRequestItem>;

export const RewardResult = z.object({
  score: z.union([z.literal(0), z.literal(1)]),
  reason: z.string(),
  decidedBy: z
    .enum(['rules', 'verifier'])
    .optional()
    .describe('set when a verifier is configured: who decided (a verifier fallback is the rules)'),
});
export type RewardResult = z.infer<typeof RewardResult>;

export const RewardBatchRequest = z.object({ items: z.array(RewardRequestItem).min(1).max(10_000) }).strict();
export const RewardBatchResponse = z.object({ scores: z.array(RewardResult) });

/** A GRPO group: many outputs for one reference, scored in one request (/v1/reward/batch). */
export const RewardGroupRequest = RewardRequestItem.omit({ output: true })
  .extend({ outputs: z.array(z.string()).min(1).max(10_000) })
  .strict();
export type RewardGroupRequest = z.infer<typeof RewardGroupRequest>;

export const ApiError = z.object({ error: z.string(), reason: z.string() });
