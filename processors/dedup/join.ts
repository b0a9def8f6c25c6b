import type { Counter } from 'prom-client';
import type { BandVerdict, QaWithdrawal } from '../../schemas/dedup.js';
import type { GradedQa } from '../../schemas/qa.js';
import type { Processor } from '../../topology/processor.js';
import { type BandAnswer, duplicateFrom } from '../qa/near-duplicates.js';

/** What the join reads and writes: the graph declares it the same whoever builds it. */
export const DEDUP_JOIN = {
  name: 'dedup',
  description:
    "join of a QA's band verdicts: unique -> qa.graded, a duplicate -> qa.rejected naming the QA it repeats; an accepted QA overtaken later -> qa.withdrawn",
  reads: ['qa.band-verdicts'],
  writes: ['qa.graded', 'qa.rejected', 'qa.withdrawn'],
  stores: ['verdicts'],
} as const satisfies Omit<Processor, 'process'>;

/** A QA whose bands have not all answered: what the join holds under its id. */
interface Waiting {
  readonly answers: BandAnswer[];
  /** Later answers: bands where a QA that comes before this one has arrived since (BandOwner). */
  readonly overtaken?: BandAnswer[];
  readonly graded: GradedQa | null;
}

/** The store key that marks a QA the join accepted: the one kind of QA an overtaken verdict withdraws. */
const acceptedKey = (qaId: string) => `accepted:${qaId}`;

/**
 * qa.band-verdicts -> qa.graded | qa.rejected | qa.withdrawn. Verdicts are keyed by QA id, so all
 * of one QA's reach one partition, in the order its owners wrote them; the join holds them in its
 * store until the last arrives, then decides with the same rule as the one-process index
 * (duplicateFrom). A waiting QA is deleted once decided: what stays is a mark per accepted QA.
 *
 * An `overtaken` verdict says a QA that comes before this one has reached one of its bands since
 * the band answered. While the QA waits, it counts as that band's duplicate. Once the QA has been
 * accepted, it is withdrawn: one record on qa.withdrawn, which the sampler, the feeder, the count
 * sink and the exports take out of the dataset. A QA already refused stays refused. Nothing is
 * ever taken back in, so the QA kept of a group of duplicates is the first in dedupOrder, the
 * same after every arrival order (test/unit/dedup-order.test.ts).
 */
export function dedupJoinProcessor(opts: { readonly rejections?: Counter<'code'> } = {}): Processor {
  return {
    ...DEDUP_JOIN,
    batchSize: 1000,
    async process(batch, ctx) {
      const verdicts = ctx.store('verdicts');
      for (const r of batch) {
        const v = r.value as BandVerdict;
        const answer = { band: v.band, duplicateOf: v.duplicateOf, similarity: v.similarity };
        if (v.overtaken) {
          const held = verdicts.get<Waiting>(v.qaId);
          if (held) verdicts.put(v.qaId, { ...held, overtaken: [...(held.overtaken ?? []), answer] });
          else if (verdicts.get<number>(acceptedKey(v.qaId)) !== undefined) {
            // Each band the newcomer shares says so: the first withdraws, the rest find no mark.
            verdicts.delete(acceptedKey(v.qaId));
            ctx.emit('qa.withdrawn', v.qaId, {
              qaId: v.qaId,
              duplicateOf: v.duplicateOf!,
              kind: v.band === 'exact' ? 'exact' : 'near',
              similarity: v.similarity,
            } satisfies QaWithdrawal);
          }
          continue;
        }
        const before = verdicts.get<Waiting>(v.qaId) ?? { answers: [], graded: null };
        // A band that answers twice (a record delivered again) counts once.
        if (before.answers.some((a) => a.band === v.band)) continue;
        const waiting: Waiting = {
          ...before,
          answers: [...before.answers, answer],
          graded: v.graded ?? before.graded,
        };
        if (waiting.answers.length < v.bands || !waiting.graded) {
          verdicts.put(v.qaId, waiting);
          continue;
        }
        verdicts.delete(v.qaId);
        const { candidate, grade } = waiting.graded;
        const duplicate = duplicateFrom([...waiting.answers, ...(waiting.overtaken ?? [])]);
        if (!duplicate) {
          verdicts.put(acceptedKey(v.qaId), 1);
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
