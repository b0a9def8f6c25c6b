import type { Analytics } from '../analytics/clickhouse.js';
import { insertLlmCalls } from '../analytics/llm-calls.js';
import { LLM_CALLS_TOPIC } from '../llm/index.js';
import type { LlmCallRecord } from '../schemas/llm.js';
import type { Processor } from '../topology/processor.js';

/** What the llm-calls sink reads and writes: the graph declares it the same with or without ClickHouse. */
export const LLM_CALLS_SINK = {
  name: 'llm-calls',
  description: 'LLM call records from every stage worker into ClickHouse llm_calls, idempotent by call id',
  reads: [LLM_CALLS_TOPIC.name],
  writes: [],
  stores: [],
  sinks: ['clickhouse:llm_calls'],
} as const satisfies Omit<Processor, 'process'>;

/**
 * llm.calls -> ClickHouse llm_calls, a batch per step, before the step commits. A crash between
 * the insert and the commit inserts the same calls again, which changes nothing: llm_calls is a
 * ReplacingMergeTree keyed by call id.
 */
export function llmCallsSinkProcessor(opts: { readonly analytics: Analytics }): Processor {
  return {
    ...LLM_CALLS_SINK,
    batchSize: 1000,
    // An insert is a ClickHouse part: at most about one a second (see Processor.lingerMs).
    lingerMs: 1000,
    async process(batch, ctx) {
      const calls = batch.map((r) => r.value as LlmCallRecord);
      ctx.sink(() => insertLlmCalls(opts.analytics, calls));
    },
  };
}
