import { RECORD_SCHEMAS } from '../schemas/index.js';
import { sampleArticle } from '../test/fixtures/records.js';
import { STAMP_KEYS_ENV, StampSeal } from '../topology/runtime/kafka/stamp-seal.js';
import { fmt, pairedRates, type Run, ratioLine } from './harness.js';
import { type Client, type Mode, onFreshTopics, rawKafkajs, rawRdkafka, throughEngine } from './kafka.js';

/**
 * What sealing stamps costs (issue 32). On Kafka a stamp counts only with its seal, an HMAC-SHA256
 * over the stamp and the value's bytes: a reader verifies one per stamped record, a writer makes one
 * per stamped record. Per record, beside the work those records cost before: on the forward path
 * nothing (the header was copied), on the emit path zod's check and serialising.
 * Then the engine on the broker, forward and emit: sealed (keys set) against no keys (every
 * record read is validated), and sealed against the raw client copy, the line BENCHMARKS.md
 * recorded before seals (forward 0.86 rdkafka, 0.95 kafkajs; emit 0.54, 0.68).
 */
const KEY = 'bench-stamp-key-0123456789abcdef';
/** The value the Kafka bench moves: an article with a 20-sentence abstract. */
const SHORT = JSON.stringify(
  RECORD_SCHEMAS.article.parse({
    ...sampleArticle,
    id: 'pmid:1',
    abstract: 'Abstract number 1. '.repeat(20),
  }),
);
/** A full-text article: 24 sections of about 1,500 characters, as JATS from PMC gives. */
const FULL_TEXT = JSON.stringify(
  RECORD_SCHEMAS.article.parse({
    ...sampleArticle,
    id: 'pmcid:PMC1',
    abstract: 'Abstract number 1. '.repeat(20),
    sections: Array.from({ length: 24 }, (_, i) => ({
      heading: `Section ${i}`,
      text: `Mitochondria and ribosomes in cell ${i} were measured by flow cytometry. `.repeat(20),
    })),
  }),
);
const STAMP = '0123456789abcdef0123456789abcdef';

/** Microseconds per call of fn, the median of 5 rounds of `n` calls. */
function microsPer(fn: () => void, n = 50_000): number {
  for (let i = 0; i < 2_000; i++) fn();
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) {
    const started = performance.now();
    for (let i = 0; i < n; i++) fn();
    rounds.push(((performance.now() - started) * 1000) / n);
  }
  return rounds.sort((a, b) => a - b)[2]!;
}

const us = (x: number) => `${x.toFixed(2)} µs`;

function perRecord(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const writer = new StampSeal([KEY]);
  const rotated = new StampSeal([KEY, 'bench-old-stamp-key-00000000000']);
  const header = writer.sealed(STAMP, bytes)!;
  const n = Math.max(2_000, Math.round(30_000_000 / bytes.length));
  let sink = 0;
  const sign = microsPer(() => {
    sink += writer.sealed(STAMP, bytes)!.length;
  }, n);
  const verify = microsPer(() => {
    sink += rotated.verified(header, bytes) ? 1 : 0;
  }, n);
  // A record whose seal fails is tried with every key before it is validated.
  const other = Buffer.from(bytes).fill(32, 0, 1);
  const refused = microsPer(() => {
    sink += rotated.verified(header, other) ? 1 : 0;
  }, n);
  const article = RECORD_SCHEMAS.article;
  const validate = microsPer(
    () => {
      sink += JSON.stringify(article.parse(JSON.parse(value))).length;
    },
    Math.round(n / 3),
  );
  if (sink < 0) throw new Error('unreachable');
  const size = `${fmt(bytes.length)}-byte article`;
  return [
    `per record (${size}): sign ${us(sign)}, verify ${us(verify)} (seal of the first of 2 keys), a refused seal ${us(refused)} (both keys tried)`,
    `forward path (${size}): verify + sign ${us(verify + sign)} per record, where it cost nothing before; without keys it validates instead: parse, zod, serialise ${us(validate)}`,
    `emit path (${size}): ${us(validate + verify + sign)} per record vs ${us(validate)} before (parse, zod, serialise) = ${((validate + verify + sign) / validate).toFixed(2)}x`,
  ];
}

/** Runs `fn` with the stamp keys set (sealed) or unset, the env var restored after. */
async function withKeys<T>(sealed: boolean, fn: () => Promise<T>): Promise<T> {
  const before = process.env[STAMP_KEYS_ENV];
  if (sealed) process.env[STAMP_KEYS_ENV] = KEY;
  else delete process.env[STAMP_KEYS_ENV];
  try {
    return await fn();
  } finally {
    if (before === undefined) delete process.env[STAMP_KEYS_ENV];
    else process.env[STAMP_KEYS_ENV] = before;
  }
}

/**
 * A run on fresh topics, tried again when the broker had not yet made a new topic known to the
 * leader ("This server does not host this topic-partition" on a loaded machine): a run sets up
 * its own topics, so a retry measures the same thing.
 */
async function retried(fn: () => Promise<Run>): Promise<Run> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (attempt === 3) throw e;
      process.stderr.write(`stamps: run failed (${(e as Error).message}), again\n`);
    }
  }
}

export async function run(): Promise<string[]> {
  const lines: string[] = [];
  // Each line as soon as it is known too: a long suite that fails late keeps what it measured.
  const print = (line: string) => {
    lines.push(line);
    process.stderr.write(`${line}\n`);
  };
  for (const value of [SHORT, FULL_TEXT]) for (const line of perRecord(value)) print(line);
  const repeats = Number(process.env.BENCH_REPEATS ?? 3);
  for (const client of (process.env.BENCH_CLIENTS?.split(',').filter(Boolean) ?? [
    'kafkajs',
    'rdkafka',
  ]) as Client[]) {
    for (const mode of ['forward', 'emit'] as Mode[]) {
      const engine = (sealed: boolean) => () =>
        retried(() => withKeys(sealed, () => onFreshTopics(client, mode, throughEngine)));
      const keys = await pairedRates(engine(true), engine(false), repeats);
      print(
        ratioLine(
          `kafka/${client}, one processor (${mode}), sealed stamps`,
          keys.figure,
          'no stamp keys (every record validated)',
          keys.baseline,
        ),
      );
      const raw = client === 'kafkajs' ? rawKafkajs : rawRdkafka;
      const copy = await pairedRates(
        engine(true),
        () => retried(() => withKeys(true, () => onFreshTopics(client, mode, raw))),
        repeats,
      );
      print(
        ratioLine(
          `kafka/${client}, one processor (${mode}), sealed stamps`,
          copy.figure,
          `raw ${client} consume+produce`,
          copy.baseline,
        ),
      );
    }
  }
  lines.push(`(${fmt(repeats)} interleaved pairs each, medians)`);
  return lines;
}
