import type { Analytics } from '../analytics/clickhouse.js';
import { insertMixVersions } from '../analytics/mix-store.js';
import { insertQa, insertWithdrawn, qaRow } from '../analytics/qa-store.js';
import type { QaWithdrawal } from '../schemas/dedup.js';
import type { MixState } from '../schemas/mix-state.js';
import type { ClassifiedQa } from '../schemas/qa.js';
import type { Processor } from '../topology/processor.js';

/** What the count sink reads and writes: the graph declares it the same with or without ClickHouse. */
export const COUNT_SINK = {
  name: 'count-sink',
  description: 'QA rows, topic counts and mix versions into ClickHouse, deduplicated by QA id and version',
  reads: ['qa.classified', 'qa.withdrawn', 'mix.state'],
  writes: [],
  stores: [],
  sinks: ['clickhouse:qa', 'clickhouse:qa_withdrawn', 'clickhouse:mix_history'],
} as const satisfies Omit<Processor, 'process'>;

/**
 * qa.classified -> ClickHouse `qa` (and through its materialized view, topic_counts),
 * qa.withdrawn -> `qa_withdrawn` (which counts of accepted QA leave out), and
 * mix.state -> `mix_history`: batched inserts per step, run before the step commits. Mix versions
 * are written from the log, not by the sampler beside its step, so the history holds exactly the
 * versions the log committed (a sampler step killed after a side write would leave one the log
 * never got). A crash between the insert and the
 * commit replays the step and inserts the same rows again, which changes nothing: qa is a
 * ReplacingMergeTree keyed by QA id and topic_counts holds sets of ids (migrations 0001, 0007).
 */
export function countSinkProcessor(opts: { readonly analytics: Analytics }): Processor {
  return {
    ...COUNT_SINK,
    batchSize: 1000,
    // An insert is a ClickHouse part: at most about one a second (see Processor.lingerMs).
    lingerMs: 1000,
    async process(batch, ctx) {
      const rows = batch
        .filter((r) => r.topic === 'qa.classified')
        .map((r) => qaRow(r.value as ClassifiedQa, r.timestamp));
      const withdrawn = batch.filter((r) => r.topic === 'qa.withdrawn').map((r) => r.value as QaWithdrawal);
      const mixes = batch.filter((r) => r.topic === 'mix.state').map((r) => r.value as MixState);
      ctx.sink(async () => {
        await insertQa(opts.analytics, rows);
        await insertWithdrawn(opts.analytics, withdrawn);
        await insertMixVersions(opts.analytics, mixes);
      });
    },
  };
}
