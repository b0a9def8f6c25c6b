import type { ConcurrencyState } from '../llm/index.js';
import { rejectionCodesOf } from '../processors/grade.js';
import { BAND_COUNT } from '../processors/qa/near-duplicates.js';
import { DeadLetterCounts } from '../schemas/dead-letter.js';
import type { LlmCallRecord } from '../schemas/llm.js';
import type { ClassifiedQa } from '../schemas/qa.js';
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
  /**
   * Every request sent to an endpoint, by outcome (the LLM layer's count: failed and aborted
   * requests included, which no call record accounts).
   */
  requests: ReadonlyMap<string, number> = new Map();
  /** Where each endpoint's adaptive concurrency limit stands (the LLM layer's). */
  concurrency: () => readonly ConcurrencyState[] = () => [];

  add(call: LlmCallRecord): void {
    if (call.cached) this.journalHits++;
    else this.paid++;
    this.attempts += call.attempts;
    this.inputTokens += call.inputTokens;
    this.outputTokens += call.outputTokens;
    this.costUsd += call.costUsd;
  }
}

/** Topics with one record per band of each QA (processors/dedup/). */
const BAND_TOPICS: readonly string[] = ['qa.bands', 'qa.band-verdicts'];

async function counterValues(metric: { get(): Promise<{ values: { labels: object; value: number }[] }> }) {
  return (await metric.get()).values as { labels: Record<string, string>; value: number }[];
}

/**
 * The topics the summary of `run --until-idle` reads beyond what its processors read: a role that
 * runs it needs READ on them (`kafka acls --until-idle`).
 */
export const SUMMARY_READS = { deadLetters: 'dlq', rejected: 'qa.rejected' } as const;
/**
 * The summary `run --until-idle` prints: per processor what it took in and what became of it
 * (in = out + rejected + dead letters for grade and the dedup join; one output per input for classify), dead
 * letters by code, what the LLM cost, and the topics' sizes in the log.
 */
export async function runSummary(opts: {
  runtime: Runtime;
  metrics: EngineMetrics;
  processors: readonly string[];
  llm: LlmTally;
  dlqFrom: number[];
  /** qa.rejected's end offsets when the run began: the rejections it made are counted by code. */
  rejectedFrom: number[];
  seconds: number;
}): Promise<string> {
  const lines = [`run summary (${opts.seconds.toFixed(1)} s):`];
  const inputs = await counterValues(opts.metrics.recordsIn);
  const outputs = await counterValues(opts.metrics.recordsOut);
  const deadByCode = await counterValues(opts.metrics.deadLetters);
  for (const p of opts.processors) {
    const n = inputs.find((v) => v.labels.processor === p)?.value ?? 0;
    const outs = outputs.filter((v) => v.labels.processor === p && v.labels.topic !== 'dlq');
    const dl = deadByCode.filter((v) => v.labels.processor === p).reduce((n, v) => n + v.value, 0);
    // The band topics carry each accepted QA once per band: say how many QA that is.
    const parts = outs.map(
      (v) =>
        `${v.labels.topic} ${v.value}${BAND_TOPICS.includes(v.labels.topic!) ? ` (${v.value / BAND_COUNT} QA)` : ''}`,
    );
    lines.push(`  ${p.padEnd(11)} in ${n} -> ${[...parts, `dead letters ${dl}`].join(', ')}`);
  }
  const passages =
    (await opts.metrics.registry.getSingleMetric('bioalchemy_extract_passages_total')?.get())?.values ?? [];
  if (passages.length)
    lines.push(`  passages  ${passages.map((v) => `${v.labels.outcome} ${v.value}`).join(', ')}`);
  const dead = new DeadLetterCounts();
  for (const [partition, from] of opts.dlqFrom.entries()) {
    for (let at = from; ; ) {
      const records = await opts.runtime.read(SUMMARY_READS.deadLetters, partition, at, 1000);
      if (records.length === 0) break;
      for (const r of records) dead.add(r.value);
      at = records[records.length - 1]!.offset + 1;
    }
  }
  // One line per code and processor, with its most frequent reason (without particulars).
  const groups = dead.byCode();
  lines.push(`dead letters by code${groups.length ? ':' : ': none'}`);
  for (const g of groups) {
    const more = g.reasons.length > 1 ? ` (and ${g.reasons.length - 1} other reason(s))` : '';
    const who = g.processor ? ` (${g.processor})` : '';
    lines.push(`  ${String(g.n).padStart(5)}  ${g.code}${who}: ${g.reasons[0]!.reason}${more}`);
  }
  // One rejection may fail several rules: it counts under each of its codes.
  const rejections = new Map<string, number>();
  let rejected = 0;
  for (const [partition, from] of opts.rejectedFrom.entries()) {
    for (let at = from; ; ) {
      const records = await opts.runtime.read(SUMMARY_READS.rejected, partition, at, 1000);
      if (records.length === 0) break;
      for (const r of records) {
        rejected++;
        for (const code of rejectionCodesOf(r.value)) rejections.set(code, (rejections.get(code) ?? 0) + 1);
      }
      at = records[records.length - 1]!.offset + 1;
    }
  }
  lines.push(
    `rejections by code${rejected ? ` (${rejected} rejected, each under every rule it failed):` : ': none'}`,
  );
  for (const [code, n] of [...rejections].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])))
    lines.push(`  ${String(n).padStart(5)}  ${code}`);
  const l = opts.llm;
  // The layer's count when it has one: every request sent, not only those of calls that succeeded.
  const sent = l.requests.size ? [...l.requests.values()].reduce((a, b) => a + b, 0) : l.attempts;
  const outcomes = [...l.requests].sort((a, b) => b[1] - a[1]).map(([o, n]) => `${o} ${n}`);
  lines.push(
    `LLM: ${l.paid} calls paid (${sent} requests sent, retries included${outcomes.length ? `: ${outcomes.join(', ')}` : ''}), ${l.journalHits} journal hits, ` +
      `tokens ${l.inputTokens} in / ${l.outputTokens} out, cost $${l.costUsd.toFixed(4)}`,
  );
  for (const c of l.concurrency())
    lines.push(
      `LLM concurrency, ${c.endpoint} ${c.model}: limit ${c.limit} of ${c.bound}${c.oneAtATime ? ' (one at a time: the server ends the stream in progress when another request arrives)' : c.stated ? ` (the server states ${c.stated} slots)` : ''}, queueing seen ${c.queueingSeen} times`,
    );
  const sizes: string[] = [];
  for (const topic of [
    'articles',
    'qa.candidates',
    'qa.graded',
    'qa.rejected',
    'qa.classified',
    'qa.withdrawn',
    'dlq',
  ]) {
    sizes.push(`${topic} ${(await opts.runtime.endOffsets(topic)).reduce((a, b) => a + b, 0)}`);
  }
  // End offsets, not record counts: on Kafka a transaction's commit marker takes an offset, and
  // an aborted transaction's records stay below the end (read_committed readers skip both).
  lines.push(`log end offsets: ${sizes.join(', ')}`);
  lines.push(...(await acceptedExample(opts.runtime)));
  return lines.join('\n');
}

/**
 * One accepted QA as a trainer will see it, and the command that exports them all: what a first
 * run has made, not only what it counted.
 */
async function acceptedExample(runtime: Runtime): Promise<string[]> {
  let last: ClassifiedQa | null = null;
  for (const [partition, end] of (await runtime.endOffsets('qa.classified')).entries()) {
    // A few records back: on Kafka the last offsets may be transaction markers.
    const records = await runtime.read('qa.classified', partition, Math.max(0, end - 8), 8);
    const value = records.at(-1)?.value;
    if (value !== undefined) last = JSON.parse(value) as ClassifiedQa;
  }
  if (!last) return ['accepted QA: none yet (the rejections above say why)'];
  const c = last.candidate;
  const topics = [...new Set(last.classification.labels.map((l) => l.category))].join(', ') || 'none';
  return [
    'an accepted QA (bioalchemy export --format jsonl --out train.jsonl writes the training mix):',
    `  question: ${c.question}`,
    ...(c.kind === 'multiple-choice' ? c.options.map((o, i) => `    ${'ABCDEFGHIJ'[i]}) ${o}`) : []),
    `  answer:   ${c.answer}`,
    `  topics:   ${topics}`,
  ];
}
