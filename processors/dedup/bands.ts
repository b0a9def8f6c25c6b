import type { BandVerdict, QaBand } from '../../schemas/dedup.js';
import type { Processor } from '../../topology/processor.js';
import { BandOwner, SignatureCache } from '../qa/near-duplicates.js';

/** What the band owners read and write: the graph declares it the same whoever builds it. */
export const DEDUP_BANDS = {
  name: 'dedup-bands',
  description: 'owner of each MinHash band key: does the band already hold a near-duplicate of the question?',
  reads: ['qa.bands'],
  writes: ['qa.band-verdicts'],
  stores: ['bands'],
} as const satisfies Omit<Processor, 'process'>;

/**
 * qa.bands -> qa.band-verdicts. qa.bands is keyed by band key, so every question with a given
 * band key reaches one partition, whichever grade worker accepted it: its owner answers and
 * registers the question there (processors/qa/near-duplicates.ts, BandOwner). The answer goes back
 * keyed by QA id, where the join waits for all of a QA's bands; so does a later answer for each
 * member the question overtakes (one it comes before in dedupOrder), marked `overtaken`.
 * The store is the partition's, restored from its changelog like any other, and a band keeps at
 * most its newest 16 ids, so a check costs the same after 345,000 questions as after 10.
 */
export function dedupBandsProcessor(opts: { readonly threshold: number }): Processor {
  // Signatures never change (a QA id hashes its question), so a cached one is never stale.
  const cache = new SignatureCache();
  return {
    ...DEDUP_BANDS,
    batchSize: 1000,
    async process(batch, ctx) {
      const owner = new BandOwner(ctx.store('bands'), opts.threshold, cache);
      for (const r of batch) {
        const record = r.value as QaBand;
        const { answer, overtaken } = owner.answer(
          record.qaId,
          { band: record.band, key: r.key ?? '' },
          record.signature,
          record.order ?? record.qaId,
        );
        ctx.emit('qa.band-verdicts', record.qaId, {
          qaId: record.qaId,
          band: record.band,
          bands: record.bands,
          duplicateOf: answer.duplicateOf,
          similarity: answer.similarity,
          ...(record.graded ? { graded: record.graded } : {}),
        } satisfies BandVerdict);
        for (const o of overtaken)
          ctx.emit('qa.band-verdicts', o.qaId, {
            qaId: o.qaId,
            band: o.band,
            bands: record.bands,
            duplicateOf: o.by,
            similarity: o.similarity,
            overtaken: true,
          } satisfies BandVerdict);
      }
    },
  };
}
