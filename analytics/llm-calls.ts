import { z } from 'zod';
import type { LlmCallRecord } from '../schemas/llm.js';
import type { Analytics } from './clickhouse.js';

/** Idempotent by call id (ReplacingMergeTree): an insert retried after a failure replaces itself. */
export async function insertLlmCalls(a: Analytics, calls: readonly LlmCallRecord[]): Promise<void> {
  if (calls.length === 0) return;
  await a.client.insert({
    table: 'llm_calls',
    format: 'JSONEachRow',
    values: calls.map((c) => ({
      call_id: c.callId,
      request_key: c.requestKey,
      stage: c.stage,
      provider: c.provider,
      model: c.model,
      input_tokens: c.inputTokens,
      output_tokens: c.outputTokens,
      latency_ms: c.latencyMs,
      cost_usd: c.costUsd,
      cached: c.cached ? 1 : 0,
      attempts: c.attempts,
      repair: c.repair ? 1 : 0,
      reasoning_tokens: c.reasoningTokens ?? 0,
      at: Math.floor(c.at / 1000),
    })),
  });
}

const Count = z.coerce.number();
export const StageSpend = z.object({
  stage: z.string(),
  calls: Count,
  paid: Count,
  journalHits: Count,
  inputTokens: Count,
  outputTokens: Count,
  costUsd: Count,
});
export type StageSpend = z.infer<typeof StageSpend>;

/** Calls, tokens and cost per stage, over everything recorded. */
export async function spendByStage(a: Analytics): Promise<StageSpend[]> {
  const rows = await a.client.query({
    query: `SELECT stage, count() AS calls, countIf(cached = 0) AS paid, countIf(cached = 1) AS journalHits,
              sum(input_tokens) AS inputTokens, sum(output_tokens) AS outputTokens, sum(cost_usd) AS costUsd
            FROM llm_calls FINAL GROUP BY stage ORDER BY stage`,
    format: 'JSONEachRow',
  });
  return z.array(StageSpend).parse(await rows.json());
}
