import { z } from 'zod';
import { GradedQa } from './qa.js';

/**
 * Global de-duplication of QA, the streaming way (processors/dedup/): grade sends each accepted
 * QA to the owner of each of its MinHash band keys (a repartition topic, keyed by the band key),
 * each owner says whether its band already holds a near-duplicate, and a join by QA id decides
 * once every owner has answered. So duplicates meet whatever partition or worker made them.
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
  graded: GradedQa.optional().describe('the accepted QA itself, on its exact record only'),
});
export type QaBand = z.infer<typeof QaBand>;

export const BandVerdict = z.object({
  qaId: QaId,
  band: Band,
  bands: Bands,
  duplicateOf: QaId.nullable().describe('the QA of this band the question repeats, if any'),
  similarity: z.number().min(0).max(1).describe('estimated Jaccard similarity to duplicateOf; 0 if none'),
  graded: GradedQa.optional().describe('the accepted QA itself, on its exact verdict only'),
});
export type BandVerdict = z.infer<typeof BandVerdict>;
