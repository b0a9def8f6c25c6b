import type { Counter } from 'prom-client';
import type { BandVerdict } from '../../schemas/dedup.js';
import type { GradedQa } from '../../schemas/qa.js';
import type { Processor } from '../../topology/processor.js';
import { type BandAnswer, duplicateFrom } from '../qa/near-duplicates.js';

/** What the join reads and writes: the graph declares it the same whoever builds it. */
export const DEDUP_JOIN = {
  name: 'dedup',
  description:
    "join of a QA's band verdicts: unique -> qa.graded, a duplicate -> qa.rejected naming the QA it repeats",
  reads: ['qa.band-verdicts'],
  writes: ['qa.graded', 'qa.rejected'],
  stores: ['verdicts'],
} as const satisfies Omit<Processor, 'process'>;

/** A QA whose bands have not all answered: what the join holds under its id. */
interface Waiting {
  readonly answers: BandAnswer[];
  readonly graded: GradedQa | null;
}

/**
 * qa.band-verdicts -> qa.graded | qa.rejected. Verdicts are keyed by QA id, so all of one QA's
 * reach one partition; the join holds them in its store until the last arrives, then decides with
 * the same rule as the one-process index (duplicateFrom). A waiting QA is deleted once decided:
 * the store holds only QA whose owners are still answering, never the history.
 */
export function dedupJoinProcessor(opts: { readonly rejections?: Counter<'code'> } = {}): Processor {
  return {
    ...DEDUP_JOIN,
    batchSize: 1000,
    async process(batch, ctx) {
      const verdicts = ctx.store('verdicts');
      for (const r of batch) {
        const v = r.value as BandVerdict;
        const before = verdicts.get<Waiting>(v.qaId) ?? { answers: [], graded: null };
        // A band that answers twice (a record delivered again) counts once.
        if (before.answers.some((a) => a.band === v.band)) continue;
        const waiting: Waiting = {
          answers: [
            ...before.answers,
            { band: v.band, duplicateOf: v.duplicateOf, similarity: v.similarity },
          ],
          graded: v.graded ?? before.graded,
        };
        if (waiting.answers.length < v.bands || !waiting.graded) {
          verdicts.put(v.qaId, waiting);
          continue;
        }
        verdicts.delete(v.qaId);
        const { candidate, grade } = waiting.graded;
        const duplicate = duplicateFrom(waiting.answers);
        if (!duplicate) {
          ctx.emit('qa.graded', candidate.id, waiting.graded);
          continue;
        }
        const code = duplicate.kind === 'exact' ? 'duplicate' : 'near-duplicate';
        ctx.onCommit(() => opts.rejections?.inc({ code }));
        ctx.emit('qa.rejected', candidate.id, {
          candidate,
          grade: {
            ...grade,
            verdict: 'reject',
            reasons: [
              duplicate.kind === 'exact'
                ? `duplicate: the same question as ${duplicate.of}`
                : `near-duplicate: ${Math.round(duplicate.similarity * 100)}% similar to ${duplicate.of}`,
            ],
            codes: [code],
            duplicateOf: duplicate.of,
          },
        } satisfies GradedQa);
      }
    },
  };
}
