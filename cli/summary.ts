import type { LlmCallRecord } from '../schemas/llm.js';
import type { EngineMetrics } from '../topology/metrics.js';
import type { Runtime } from '../topology/runtime/types.js';

/** What a run paid the LLM: calls sent, journal hits, tokens and cost, from the layer's call records. */
export class LlmTally {
  paid = 0;
  journalHits = 0;
  attempts = 0;
  inputTokens = 0;
  outputTokens = 0;
  costUsd = 0;

  add(call: LlmCallRecord): void {
    if (call.cached) this.journalHits++;
    else this.paid++;
    this.attempts += call.attempts;
    this.inputTokens += call.inputTokens;
    this.outputTokens += call.outputTokens;
    this.costUsd += call.costUsd;
  }
}

/** A dead letter's reason without what differs between records of one kind (passage spans, ids). */
export function reasonKind(reason: string): string {
  return reason
    .replace(/passage -?\d+:\d+-\d+: /, '')
    .replace(/\b(of|as) [0-9a-f]{32}\b/g, '$1 <id>')
    .slice(0, 100);
}

/**
 * The reason kind of a record on the dead-letter topic. Anyone can produce to it, and a record
 * that is no dead letter (not JSON, no reason) is counted as such: it must not end the run.
 */
function deadLetterKind(value: string): string {
  try {
    const reason = (JSON.parse(value) as { reason?: unknown } | null)?.reason;
    if (typeof reason === 'string') return reasonKind(reason);
  } catch {}
  return 'unreadable dead letter';
}

async function counterValues(metric: { get(): Promise<{ values: { labels: object; value: number }[] }> }) {
  return (await metric.get()).values as { labels: Record<string, string>; value: number }[];
}

/**
 * The summary `run --until-idle` prints: per processor what it took in and what became of it
 * (in = out + rejected + dead letters for grade; one output per input for classify), dead
 * letters by reason, what the LLM cost, and the topics' sizes in the log.
 */
export async function runSummary(opts: {
  runtime: Runtime;
  metrics: EngineMetrics;
  processors: readonly string[];
  llm: LlmTally;
  dlqFrom: number[];
  seconds: number;
}): Promise<string> {
  const lines = [`run summary (${opts.seconds.toFixed(1)} s):`];
  const inputs = await counterValues(opts.metrics.recordsIn);
  const outputs = await counterValues(opts.metrics.recordsOut);
  const dead = await counterValues(opts.metrics.deadLetters);
  for (const p of opts.processors) {
    const n = inputs.find((v) => v.labels.processor === p)?.value ?? 0;
    const outs = outputs.filter((v) => v.labels.processor === p && v.labels.topic !== 'dlq');
    const dl = dead.find((v) => v.labels.processor === p)?.value ?? 0;
    const parts = outs.map((v) => `${v.labels.topic} ${v.value}`);
    lines.push(`  ${p.padEnd(9)} in ${n} -> ${[...parts, `dead letters ${dl}`].join(', ')}`);
  }
  const passages =
    (await opts.metrics.registry.getSingleMetric('bioalchemy_extract_passages_total')?.get())?.values ?? [];
  if (passages.length)
    lines.push(`  passages  ${passages.map((v) => `${v.labels.outcome} ${v.value}`).join(', ')}`);
  const reasons = new Map<string, number>();
  for (const [partition, from] of opts.dlqFrom.entries()) {
    for (let at = from; ; ) {
      const records = await opts.runtime.read('dlq', partition, at, 1000);
      if (records.length === 0) break;
      for (const r of records) {
        const kind = deadLetterKind(r.value);
        reasons.set(kind, (reasons.get(kind) ?? 0) + 1);
      }
      at = records[records.length - 1]!.offset + 1;
    }
  }
  lines.push(`dead letters by reason${reasons.size ? ':' : ': none'}`);
  for (const [reason, n] of [...reasons].sort((a, b) => b[1] - a[1]))
    lines.push(`  ${String(n).padStart(5)}  ${reason}`);
  const l = opts.llm;
  lines.push(
    `LLM: ${l.paid} calls paid (${l.attempts} requests sent, retries included), ${l.journalHits} journal hits, ` +
      `tokens ${l.inputTokens} in / ${l.outputTokens} out, cost $${l.costUsd.toFixed(4)}`,
  );
  const sizes: string[] = [];
  for (const topic of ['articles', 'qa.candidates', 'qa.graded', 'qa.rejected', 'qa.classified', 'dlq']) {
    sizes.push(`${topic} ${(await opts.runtime.endOffsets(topic)).reduce((a, b) => a + b, 0)}`);
  }
  // End offsets, not record counts: on Kafka a transaction's commit marker takes an offset, and
  // an aborted transaction's records stay below the end (read_committed readers skip both).
  lines.push(`log end offsets: ${sizes.join(', ')}`);
  return lines.join('\n');
}
