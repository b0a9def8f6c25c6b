import { z } from 'zod';

export const ChatMessage = z.object({
  role: z.enum(['system', 'user', 'assistant']),
  content: z.string(),
});
export type ChatMessage = z.infer<typeof ChatMessage>;

/** The kind of a question as the reward sees it (QaCandidate's 'multiple-choice' is 'mcq'). */
export const RewardKind = z.enum(['mcq', 'free-form']);
export type RewardKind = z.infer<typeof RewardKind>;

/**
 * What a reward needs to grade an output, in one value: verl passes only reward_model.ground_truth
 * to a reward function when it has no extra_info (main_eval), so the options travel in it.
 */
export const GroundTruth = z.object({
  answer: z.string().min(1).describe('the option letter (MCQ) or the short canonical answer'),
  kind: RewardKind,
  options: z.array(z.string()).describe('MCQ options in letter order; empty for free-form'),
  aliases: z
    .array(z.string())
    .describe('other accepted forms: the right option\'s text (MCQ); both sides of "long form (SHORT)"'),
});
export type GroundTruth = z.infer<typeof GroundTruth>;

/**
 * One training item as one superset row that verl, TRL and Hugging Face `datasets` read as-is:
 * verl's columns (data_source, prompt, ability, reward_model, extra_info), the flat ground_truth /
 * answer / solution that TRL reward functions take as keyword arguments. ground_truth is the same
 * GroundTruth as reward_model.ground_truth; answer is its plain string.
 */
export const RolloutItem = z.object({
  data_source: z.string().min(1),
  prompt: z.array(ChatMessage).min(1).describe('chat messages, rendered from the per-kind template'),
  ability: z.string().min(1),
  reward_model: z.object({ style: z.literal('rule'), ground_truth: GroundTruth }),
  ground_truth: GroundTruth,
  answer: z.string().min(1).describe('the option letter (MCQ) or the short canonical answer'),
  solution: z.string().min(1).describe('the reference answer as a final-answer line: "Answer: C"'),
  extra_info: z.object({
    index: z.number().int().nonnegative().describe('position in the epoch (feeder) or in the file (export)'),
    split: z.enum(['train', 'heldout']),
    qa_id: z.string().min(1),
    article_id: z.string().min(1),
    topics: z.array(z.string()),
    kind: RewardKind,
    options: z.array(z.string()).describe('MCQ options in letter order; empty for free-form'),
    grade: z.object({
      quality: z.number(),
      difficulty: z.number(),
      answerability: z.number(),
      verifiability: z.number(),
    }),
    copy: z.number().int().nonnegative().describe('which copy of an upsampled item (0 for the first)'),
  }),
});
export type RolloutItem = z.infer<typeof RolloutItem>;

/** A batch as leased to one trainer rank (on `rollout.batches`, one record per lease). */
export const RolloutBatch = z.object({
  id: z.string().min(1),
  run: z.string().min(1),
  mixVersion: z.number().int().nonnegative(),
  rank: z.number().int().nonnegative(),
  epoch: z.number().int().nonnegative().default(0),
  index: z.number().int().nonnegative().default(0).describe("the batch's position in its epoch"),
  attempt: z.number().int().positive().default(1).describe('1 for the first lease, 2+ for redeliveries'),
  items: z.array(RolloutItem).min(1),
  leaseDeadline: z.string().datetime(),
});
export type RolloutBatch = z.infer<typeof RolloutBatch>;

/**
 * A lease as `rollout.batches` records it, one record per lease: which items went to which rank,
 * in which slot, and when. The items' rows are the pool's (by qa id: the feeder's file, exports);
 * a record holding every row was about 100 KiB, and checking and writing it held the feeder's
 * event loop, which every lease waits on, about 2 ms a lease.
 */
export const RolloutLease = RolloutBatch.omit({ items: true }).extend({
  items: z
    .array(
      z.object({
        qaId: z.string().min(1),
        copy: z.number().int().nonnegative().describe('which copy of an upsampled item (0 for the first)'),
        index: z.number().int().nonnegative().describe('position in the epoch'),
      }),
    )
    .min(1)
    .describe('every slot of the batch as cut, in slot order'),
});
export type RolloutLease = z.infer<typeof RolloutLease>;

/** A rollout row as releases before the GroundTruth object wrote it: ground_truth the plain answer. */
const RolloutItemOfEarlierReleases = RolloutItem.extend({
  reward_model: z.object({
    style: z.literal('rule'),
    ground_truth: z.union([z.string().min(1), GroundTruth]),
  }),
  ground_truth: z.union([z.string().min(1), GroundTruth]),
});

/** `rollout.batches` as releases before the lease record wrote it: the whole batch, every row in it. */
const RolloutBatchOfEarlierReleases = RolloutBatch.extend({
  items: z.array(RolloutItemOfEarlierReleases).min(1),
});

/** The lease an earlier release's whole batch records: its slots by qa id, copy and position. */
function leaseOfBatch({ items, ...head }: z.infer<typeof RolloutBatchOfEarlierReleases>): RolloutLease {
  return {
    ...head,
    items: items.map((i) => ({
      qaId: i.extra_info.qa_id,
      copy: i.extra_info.copy,
      index: i.extra_info.index,
    })),
  };
}

/**
 * What `rollout.batches` holds: leases, and the whole batches of earlier releases, read as the
 * leases they recorded. A topic keeps its records across an upgrade (a week here), so its schema
 * reads every shape a release wrote to it.
 */
export const RolloutLeaseRecord = z.union([
  RolloutLease,
  RolloutBatchOfEarlierReleases.transform(leaseOfBatch),
]);
