import type { Analytics } from '../../analytics/clickhouse.js';
import { insertLlmCalls } from '../../analytics/llm-calls.js';
import { insertMixVersions } from '../../analytics/mix-store.js';
import type { LlmCallRecord } from '../../schemas/llm.js';
import type { LogRecord } from '../../topology/records.js';
import type { Runtime } from '../../topology/runtime/types.js';
import { generateItems, prng } from '../sampler/generated.js';
import { mixFixture } from '../sampler/mix-fixture.js';

export const SOURCES = ['asm', 'plos-compbio', 'plos-genetics', 'semantic-scholar'];
export const JOURNALS = ['Journal of Bacteriology', 'PLOS Genetics', 'PLOS Computational Biology', ''];

/**
 * `n` accepted QA rows (a tenth rejected) classified evenly over [from, to) seconds, five per
 * article, written straight to the qa table in slices (the bench writes a million).
 */
export async function insertQaRows(
  a: Analytics,
  n: number,
  opts: { from: number; to: number; seed?: number; idPrefix?: string },
): Promise<void> {
  const seed = opts.seed ?? 1;
  const span = opts.to - opts.from;
  for (let start = 0; start < n; start += 100_000) {
    const items = generateItems(Math.min(100_000, n - start), seed + start / 100_000, opts.idPrefix ?? 'qa');
    const values = items.map((it, k) => {
      const i = start + k;
      return {
        id: it.id,
        article_id: `doi:10.1/a.${seed}.${Math.floor(i / 5)}`,
        kind: i % 2 ? 'free-form' : 'multiple-choice',
        question: `question ${i}`,
        answer: 'A',
        categories: it.topics,
        verdict: i % 10 === 9 ? 'reject' : 'accept',
        quality: 0.9,
        difficulty: 0.5,
        answerability: 1,
        verifiability: 1,
        model: 'generator',
        prompt_version: 'mcq-v2',
        mix_version: 0,
        source: SOURCES[i % SOURCES.length]!,
        journal: JOURNALS[Math.floor(i / 5) % JOURNALS.length]!,
        published: it.published ?? '',
        classified_at: opts.from + Math.floor((i / n) * span),
      };
    });
    await a.client.insert({ table: 'qa', values, format: 'JSONEachRow' });
  }
}

/** Mix versions every `everySeconds` over [from, to): TVD falling as the data grows. */
export async function insertMixHistory(
  a: Analytics,
  opts: { from: number; to: number; everySeconds: number },
): Promise<number> {
  const rand = prng(7);
  let version = 0;
  const slice: ReturnType<typeof mixFixture>[] = [];
  const total = Math.ceil((opts.to - opts.from) / opts.everySeconds);
  for (let at = opts.from; at < opts.to; at += opts.everySeconds) {
    version++;
    const progress = version / total;
    const genetics = 40 + Math.round(400 * progress);
    slice.push(
      mixFixture({
        version,
        at: new Date(at * 1000).toISOString(),
        observed: { genetics, ecology: 10 + Math.round(200 * progress) },
        metrics: {
          ...mixFixture().metrics,
          items: genetics + 10,
          size: 30 + version,
          tvdReference: 0.3 * (1 - progress) + 0.02 * rand(),
          tvdTarget: 0.1 * (1 - progress),
          jsTarget: 0.12 * (1 - progress),
        },
      }),
    );
    if (slice.length === 20_000) await insertMixVersions(a, slice.splice(0));
  }
  await insertMixVersions(a, slice);
  return version;
}

/** LLM calls of three stages spread over [from, to), every tenth answered from the journal. */
export async function insertCalls(
  a: Analytics,
  n: number,
  opts: { from: number; to: number },
): Promise<void> {
  const stages = ['mcq', 'mcq-quality', 'classify'] as const;
  for (let start = 0; start < n; start += 50_000) {
    const calls: LlmCallRecord[] = [];
    for (let i = start; i < Math.min(n, start + 50_000); i++) {
      const cached = i % 10 === 0;
      calls.push({
        callId: `call-${i}`,
        requestKey: `key-${i}`,
        stage: stages[i % 3]!,
        provider: 'openai',
        model: i % 2 ? 'gpt-4o-mini' : 'test-model',
        inputTokens: 500,
        outputTokens: 100,
        latencyMs: cached ? 0 : 100 + (i % 100) * 10,
        costUsd: cached ? 0 : 0.001,
        cached,
        attempts: cached ? 0 : 1,
        repair: false,
        at: (opts.from + Math.floor(((i + 0.5) / n) * (opts.to - opts.from))) * 1000,
      });
    }
    await insertLlmCalls(a, calls);
  }
}

/**
 * Rewards for the first `n` QA ids of `insertQaRows` (seed 1, prefix qa), recorded at `at`
 * (seconds; written explicitly: 18.16 fills a column JSONEachRow omits with 0, not its DEFAULT).
 */
export async function insertRewards(
  a: Analytics,
  n: number,
  opts: { run?: string; at?: number } = {},
): Promise<void> {
  const at = opts.at ?? Math.floor(Date.now() / 1000);
  const values = Array.from({ length: n }, (_, i) => ({
    qa_id: `qa-1-${i}`,
    run: opts.run ?? 'run-1',
    step: 1,
    reward: i % 3 === 0 ? 0 : 1,
    mix_version: 0,
    recorded_at: at,
  }));
  for (let s = 0; s < values.length; s += 50_000)
    await a.client.insert({ table: 'rewards', values: values.slice(s, s + 50_000), format: 'JSONEachRow' });
}

/**
 * A log holding one partition of `topic` with these values, read as the dashboard reads it (end
 * offsets, reads from an offset); read when asked, so values pushed later are new records.
 */
export function onePartitionLog(topic: string, values: string[]): Runtime {
  const records = (): LogRecord[] =>
    values.map((value, offset) => ({ topic, partition: 0, offset, key: null, value, timestamp: 0 }));
  return {
    endOffsets: async () => [values.length],
    read: async (_topic: string, _partition: number, from: number, max: number) =>
      records().slice(from, from + max),
  } as unknown as Runtime;
}
