import type { Analytics } from '../analytics/clickhouse.js';
import { insertQa, qaRow } from '../analytics/qa-store.js';
import type { ClassifiedQa } from '../schemas/qa.js';
import type { Processor } from '../topology/processor.js';

/** What the count sink reads and writes: the graph declares it the same with or without ClickHouse. */
export const COUNT_SINK = {
  name: 'count-sink',
  description: 'QA rows and topic counts into ClickHouse, deduplicated by QA id',
  reads: ['qa.classified'],
  writes: [],
  stores: [],
  sinks: ['clickhouse:qa'],
} as const satisfies Omit<Processor, 'process'>;

/**
 * qa.classified -> ClickHouse `qa` (and through its materialized view, topic_counts): one
 * batched insert per step, run before the step commits. A crash between the insert and the
 * commit replays the step and inserts the same rows again, which changes nothing: qa is a
 * ReplacingMergeTree keyed by QA id and topic_counts holds sets of ids (migrations 0001, 0007).
 */
export function countSinkProcessor(opts: { readonly analytics: Analytics }): Processor {
  return {
    ...COUNT_SINK,
    batchSize: 1000,
    async process(batch, ctx) {
      const rows = batch.map((r) => qaRow(r.value as ClassifiedQa, r.timestamp));
      ctx.sink(() => insertQa(opts.analytics, rows));
    },
  };
}
