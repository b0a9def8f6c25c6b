import { z } from 'zod';

export const ChatMessage = z.object({
  role: z.enum(['system', 'user', 'assistant']),
  content: z.string(),
});

export const RewardSpec = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('mcq-letter'), letters: z.array(z.string().length(1)).min(2) }),
  z.object({ kind: z.literal('free-form-match'), aliases: z.array(z.string()).default([]) }),
]);

export const RolloutItem = z.object({
  id: z.string().min(1).describe('the QA id'),
  prompt: z.array(ChatMessage).min(1),
  groundTruth: z.string().min(1),
  rewardSpec: RewardSpec,
  topics: z.array(z.string()),
  dataSource: z.string(),
});

export const RolloutBatch = z.object({
  id: z.string().min(1),
  run: z.string().min(1),
  mixVersion: z.number().int().nonnegative(),
  rank: z.number().int().nonnegative(),
  items: z.array(RolloutItem).min(1),
  leaseDeadline: z.string().datetime(),
});
export type RolloutBatch = z.infer<typeof RolloutBatch>;
