import type { LlmCallRecord } from '../schemas/llm.js';
import type { OutgoingRecord } from '../topology/records.js';
import type { Runtime } from '../topology/runtime/types.js';
import type { TopicSpec } from '../topology/topology.js';

/**
 * Every model request as accounted, on its way to ClickHouse's llm_calls: a stage worker appends
 * here and never opens ClickHouse; the `llm-calls` processor, where ClickHouse is, writes them
 * (idempotent by call id). Kept a week: time enough for that processor to be down and catch up.
 */
export const LLM_CALLS_TOPIC: TopicSpec = {
  name: 'llm.calls',
  partitions: 1,
  compacted: false,
  retentionMs: 7 * 24 * 3600 * 1000,
  schema: 'llm-call',
  description: 'every LLM request as accounted (journal hits included), for ClickHouse llm_calls',
};

/**
 * Buffers call records and appends them to llm.calls in batches: accounting must not add a write
 * of the log to every call. A failed append keeps its records for the next flush; a kill loses
 * what was not flushed yet (at most the flush interval's calls), as any accounting beside the steps.
 */
export class LlmCallLog {
  private pending: OutgoingRecord[] = [];
  private flushing: Promise<void> = Promise.resolve();

  constructor(private readonly runtime: Runtime) {}

  add(call: LlmCallRecord): void {
    this.pending.push({ topic: LLM_CALLS_TOPIC.name, key: call.callId, value: JSON.stringify(call) });
  }

  flush(): Promise<void> {
    // A failed flush must not stop the next one: its records are back in `pending`.
    this.flushing = this.flushing
      .catch(() => {})
      .then(async () => {
        const batch = this.pending;
        this.pending = [];
        if (batch.length === 0) return;
        try {
          await this.runtime.append(batch);
        } catch (e) {
          this.pending = [...batch, ...this.pending];
          throw e;
        }
      });
    return this.flushing;
  }
}
