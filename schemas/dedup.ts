import { z } from 'zod';
import { GradedQa } from './qa.js';

/**
 * Global de-duplication of QA, the streaming way (processors/dedup/): grade sends each accepted
 * QA to the owner of each of its MinHash band keys (a repartition topic, keyed by the band key),
 * each owner says whether its band already holds a near-duplicate, and a join by QA id decides
 * once every owner has answered. So duplicates meet whatever partition or worker made them.
 *
 * Of a group of duplicates the one first in dedupOrder (earliest publication, then QA id) is kept,
 * whatever order they were processed in: a QA that arrives after one it comes before overtakes it,
 * and if the join had already accepted the one overtaken, it withdraws it on qa.withdrawn.
 */

const QaId = z.string().min(1);
const Band = z
  .string()
  .regex(/^(exact|[0-9]+)$/)
  .describe("'exact' (the normalised question's hash) or the LSH band's index");
const Bands = z
  .number()
  .int()
  .positive()
  .describe('how many band records the QA has: the join waits for all');

export const QaBand = z.object({
  qaId: QaId,
  band: Band,
  bands: Bands,
  signature: z.array(z.number().int().nonnegative()).describe("the question's MinHash signature"),
  order: z
    .string()
    .min(1)
    .optional()
    .describe(
      'dedupOrder: where the QA stands among its duplicates (absent in records before it: the QA id)',
    ),
  graded: GradedQa.optional().describe('the accepted QA itself, on its exact record only'),
});
export type QaBand = z.infer<typeof QaBand>;

export const BandVerdict = z.object({
  qaId: QaId,
  band: Band,
  bands: Bands,
  duplicateOf: QaId.nullable().describe('the QA of this band the question repeats, if any'),
  similarity: z.number().min(0).max(1).describe('estimated Jaccard similarity to duplicateOf; 0 if none'),
  overtaken: z
    .literal(true)
    .optional()
    .describe(
      'a later answer: a QA that comes before this one in dedupOrder has reached the band since, and duplicateOf names it',
    ),
  graded: GradedQa.optional().describe('the accepted QA itself, on its exact verdict only'),
});
export type BandVerdict = z.infer<typeof BandVerdict>;

export const QaWithdrawal = z.object({
  qaId: QaId.describe('the accepted QA withdrawn from the dataset'),
  duplicateOf: QaId.describe('the QA that comes before it in dedupOrder, which it repeats'),
  kind: z.enum(['exact', 'near']),
  similarity: z.number().min(0).max(1),
});
export type QaWithdrawal = z.infer<typeof QaWithdrawal>;
