import { z } from 'zod';

const Distribution = z.record(z.string(), z.number().nonnegative());

/** The sampler's output: the α-smoothed training mix, latest value per key on a compacted topic. */
export const MixState = z.object({
  version: z.number().int().nonnegative(),
  alpha: z.number().min(0).max(1),
  taxonomy: z.object({ name: z.string(), meshYear: z.number().int() }),
  reference: z.object({ name: z.string(), counts: Distribution }),
  observed: Distribution.describe('accepted QA pairs per category'),
  target: Distribution.describe('p_c(α) = n_c^α / Σ n^α'),
  quotas: z.record(
    z.string(),
    z.object({
      weight: z.number().nonnegative(),
      quota: z.number().int().nonnegative(),
      upsample: z.number(),
    }),
  ),
  metrics: z.object({
    size: z.number().int().nonnegative(),
    maxMinRatio: z.number().nonnegative(),
    averageUpsample: z.number().nonnegative(),
    yield: z.number().min(0).max(1),
    tvd: z.number().min(0).max(1),
  }),
});
export type MixState = z.infer<typeof MixState>;
