import { z } from 'zod';

const Distribution = z.record(z.string(), z.number().nonnegative());

/**
 * What keeps items out of training for out-of-domain evaluation: an item is held out when any
 * rule matches it (one of its topics, an article published on or after a date, its source).
 */
export const HeldOut = z
  .object({
    topics: z.array(z.string().min(1)).default([]),
    publishedFrom: z
      .string()
      .regex(/^\d{4}(-\d{2}(-\d{2})?)?$/)
      .nullable()
      .default(null)
      .describe('YYYY[-MM[-DD]]: articles published on or after it are held out'),
    sources: z.array(z.string().min(1)).default([]),
  })
  .strict();
export type HeldOut = z.infer<typeof HeldOut>;

/**
 * One topic's part of the mix. Its quota is counted in label occurrences (an item is counted once
 * in each of its topics, as the paper's percentages are). `level`, `threshold` and `damp` are the
 * selection rule that anyone holding the mix can apply to an item (processors/sampler/selection.ts
 * copiesOf): an item's draw is u(seed, id) divided by the smallest `damp` of its topics; an item of
 * this topic is taken `level - 1` times, and once more when its draw is below `threshold`; an item
 * of several topics takes the most any of them gives.
 */
export const TopicQuota = z.object({
  share: z.number().min(0).max(1).describe('target share p_c(α)'),
  quota: z.number().int().nonnegative(),
  upsample: z.number().nonnegative().describe('p_c(α) / p_c(1)'),
  level: z.number().int().nonnegative(),
  threshold: z.number().min(0).max(1),
  damp: z
    .number()
    .gt(0)
    .max(1)
    .describe("below 1 for a topic that other topics' shared items overfill: its items are taken less often"),
});
export type TopicQuota = z.infer<typeof TopicQuota>;

/** The sampler's output: the α-smoothed training mix, latest value per key on a compacted topic. */
export const MixState = z.object({
  version: z.number().int().nonnegative(),
  at: z.string().datetime(),
  reason: z
    .string()
    .describe('why this version exists: new data, the timer, a config change, the reward policy'),
  alpha: z.number().min(0).max(1),
  seed: z.number().int().nonnegative(),
  repeatCap: z.number().int().positive().describe('most copies of one item in the mix'),
  taxonomy: z.object({ name: z.string(), meshYear: z.number().int() }),
  reference: z.object({
    name: z.string(),
    counts: Distribution,
    unknown: z.array(z.string()).describe('taxonomy categories whose reference count is not known'),
  }),
  heldOut: HeldOut,
  observed: Distribution.describe('training-eligible QA items per category'),
  target: Distribution.describe('p_c(α) = n_c^α / Σ n^α over the categories the mix serves'),
  quotas: z.record(z.string(), TopicQuota),
  starving: z.array(z.string()).describe('reference categories with too few items to serve'),
  policy: z
    .object({
      moved: z.number().min(0).max(1).describe('TVD between this target and the α-target'),
      from: z.array(z.object({ category: z.string(), meanReward: z.number(), n: z.number().int() })),
      to: z.array(z.object({ category: z.string(), meanReward: z.number(), n: z.number().int() })),
    })
    .nullable()
    .default(null)
    .describe('the reward policy move behind this version, if any'),
  metrics: z.object({
    items: z.number().int().nonnegative().describe('training-eligible items'),
    heldOut: z.number().int().nonnegative().describe('items kept out for evaluation'),
    unlabelled: z
      .number()
      .int()
      .nonnegative()
      .default(0)
      .describe(
        'training-eligible items without a label (none reached classify.minConfidence): in no topic, never selected',
      ),
    size: z.number().int().nonnegative().describe('selected copies'),
    distinct: z.number().int().nonnegative().describe('distinct selected items'),
    maxMinRatio: z.number().nonnegative(),
    averageUpsample: z.number().nonnegative(),
    yield: z.number().min(0).describe('size / items'),
    tvdReference: z.number().min(0).max(1),
    tvdTarget: z.number().min(0).max(1),
    jsTarget: z.number().min(0).max(1).describe('Jensen-Shannon distance (base 2) to the target'),
    kept: z
      .number()
      .min(0)
      .max(1)
      .nullable()
      .describe('share of the previous version selection still selected'),
  }),
});
export type MixState = z.infer<typeof MixState>;
