import { afterAll, beforeAll, expect } from 'vitest';
import { MAX_PAYLOAD_BYTES } from '../../schemas/dead-letter.js';
import { partitionKey } from '../../topology/records.js';
import type { Runtime } from '../../topology/runtime/types.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, start } from '../llm-server/server.js';

/**
 * Records produced by hand to the pipeline's topics, as a user with a console producer makes
 * them: shared by the embedded test (test/e2e/hand-records.test.ts) and the Kafka one
 * (test/services/hand-records.test.ts). Every bad value carries a marker naming its kind and
 * topic, so its dead letters are found by their payload (the refused value, cut to 64 KiB).
 */

/** The processors that read each topic of the pipeline, each of which must refuse a bad record on it. */
export const READERS: Record<string, readonly string[]> = {
  articles: ['extract'],
  'qa.candidates': ['grade'],
  'qa.graded': ['classify'],
  'qa.classified': ['count-sink', 'sampler', 'feeder'],
  'mix.state': ['count-sink', 'feeder'],
};

/**
 * Topics no processor reads: a bad record there is never dead-lettered (nothing refuses it), and
 * must simply not disturb the run. llm.journal is read whole when `run` starts (the response
 * cache): a record it cannot use is a cache miss.
 */
export const UNREAD = ['qa.rejected', 'rollout.batches', 'dlq', 'llm.journal'] as const;

/** Topics whose records Kafka keeps by key (compacted): the broker refuses a record without one. */
export const COMPACTED = new Set(['mix.state', 'llm.journal']);

export const MB = 1024 * 1024;
/** The "10 MB value" of the issue. */
export const HUGE = 10 * MB;
/** A value just under Kafka's default record limit (message.max.bytes, 1048588 bytes): both runtimes take it. */
export const BIG = 1_000_000;

export type BadKind = 'wrong-schema' | 'not-json' | 'big' | 'huge';

/**
 * The text every bad value of this kind and topic starts with (or carries in its first 64 KiB);
 * `wave` tells apart records of one kind and topic produced at another time.
 */
export const marker = (kind: BadKind, topic: string, wave = 1) => `hand ${kind} ${topic} #${wave};`;

/** Valid JSON that is no record of any topic's schema. */
export const wrongSchema = (topic: string, wave = 1) =>
  JSON.stringify({ hand: marker('wrong-schema', topic, wave), id: 42 });

/** Not JSON: text, then (as raw bytes on Kafka) bytes that are not UTF-8 either. */
export const notJson = (topic: string, wave = 1) => `${marker('not-json', topic, wave)} {"unterminated": `;
export const notJsonBytes = (topic: string, wave = 1) =>
  Buffer.concat([Buffer.from(notJson(topic, wave)), Buffer.from([0xff, 0xfe, 0x00, 0xc3])]);

/** Not JSON, `bytes` long (ASCII). */
export const bigNotJson = (topic: string, bytes = BIG) => {
  const head = `${marker('big', topic)} `;
  return head + 'y'.repeat(bytes - head.length);
};

/** Valid JSON of the wrong schema, `bytes` long (ASCII). */
export function hugeWrongSchema(topic: string, bytes = HUGE): string {
  const head = `{"hand":"${marker('huge', topic)}","pad":"`;
  return `${head}${'x'.repeat(bytes - head.length - 2)}"}`;
}

/** What a dead letter's reason says for each kind: the topic's schema with the failing field, or not JSON. */
export function reasonFor(kind: BadKind, topic: string): RegExp {
  return kind === 'wrong-schema' || kind === 'huge'
    ? new RegExp(`^invalid input: ${topic.replace('.', '\\.')}: `)
    : /^invalid input: not JSON: /;
}

/** English, biology-flavoured sentences, different for each seed: the test LLM asks questions about them. */
export function sentences(seed: number, chars: number): string {
  const vocabulary = (
    'mitochondria ribosome chloroplast transcription translation kinase phosphatase receptor membrane ' +
    'cytoskeleton microtubule chromatin histone methylation acetylation promoter enhancer silencer operon ' +
    'plasmid bacteriophage biofilm quorum sensing symbiosis parasitism predation pollination germination ' +
    'photosynthesis respiration glycolysis fermentation apoptosis autophagy mitosis meiosis recombination'
  ).split(' ');
  let s = seed >>> 0 || 1;
  const word = () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return vocabulary[s % vocabulary.length]!;
  };
  const out: string[] = [];
  let length = 0;
  for (let i = 0; length < chars; i++) {
    const sentence = `The ${word()} of the ${word()} increased with ${word()} and ${word()} in the ${word()} of cells ${seed}.${i}.`;
    out.push(sentence);
    length += sentence.length + 1;
  }
  return out.join(' ').slice(0, chars);
}

export function article(id: string, seed: number, abstractChars = 700) {
  return {
    id,
    source: 'hand',
    doi: null,
    pmid: null,
    pmcid: null,
    title: `Hand-made study ${seed}`,
    abstract: sentences(seed, abstractChars),
    sections: [],
    journal: null,
    published: '2024-05',
    licence: 'CC BY 4.0',
    contentHash: `hand-${id}`,
  };
}

const provenance = (articleId: string) => ({ articleId, source: 'hand', licence: 'CC BY 4.0' });
const stamp = { model: 'hand', promptVersion: 'hand-v1' };

export function candidate(id: string, seed: number) {
  const text = sentences(seed, 300);
  return {
    id,
    articleId: `hand:${id}`,
    passage: { sectionIndex: -1, start: 0, end: text.length, text },
    kind: 'free-form',
    question: `Which process links glycolysis and respiration in dividing yeast cells (case ${seed})?`,
    answer: 'fermentation',
    rationale: 'Stated in the passage.',
    provenance: provenance(`hand:${id}`),
    generatedBy: stamp,
  };
}

export function graded(id: string, seed: number) {
  return {
    candidate: candidate(id, seed),
    grade: {
      scores: { quality: 0.9, difficulty: 0.5, answerability: 0.9, verifiability: 0.9 },
      verdict: 'accept',
      reasons: [],
      gradedBy: stamp,
    },
  };
}

export function classified(id: string, seed: number) {
  return {
    ...graded(id, seed),
    classification: {
      labels: [{ category: 'cell-biology', confidence: 0.9 }],
      meshLabels: [],
      taxonomy: { name: 'MeSH Biology', meshYear: 2024 },
      classifiedBy: stamp,
    },
  };
}

/** The valid records produced by hand beside the bad ones; each must come out of its stage. */
export const GOOD = {
  /** Keyed by id, and one without a key. */
  articles: [article('hand:article-keyed', 1), article('hand:article-null-key', 2)],
  candidates: [candidate('hand-candidate-keyed', 3), candidate('hand-candidate-null-key', 4)],
  graded: graded('hand-graded', 5),
  classified: classified('hand-classified', 6),
};

/** A valid article of `bytes` (its abstract): no record limit in the pipeline, so extract takes it. */
export function hugeArticle(bytes = HUGE) {
  const a = article('hand:article-huge', 7);
  const base = JSON.stringify(a).length;
  return { ...a, abstract: sentences(7, bytes - base + a.abstract.length) };
}

export interface DeadLetterValue {
  reason: string;
  processor: string | null;
  origin: { kind: string; topic?: string };
  payload: string;
}

/** The values of a topic that are JSON objects (the hand-made bad ones that are not are left out). */
export async function jsonValues<T = Record<string, unknown>>(runtime: Runtime, topic: string): Promise<T[]> {
  const out: T[] = [];
  for (const [partition, end] of (await runtime.endOffsets(topic)).entries()) {
    for (let from = 0; from < end; ) {
      const rows = await runtime.read(topic, partition, from, 1000);
      if (!rows.length) break;
      for (const r of rows) {
        try {
          const value = JSON.parse(r.value) as unknown;
          if (value && typeof value === 'object') out.push(value as T);
        } catch {}
      }
      from = rows[rows.length - 1]!.offset + 1;
    }
  }
  return out;
}

/** The dead letters (the hand-made records on dlq, which are none, left out). */
export async function deadLetters(runtime: Runtime): Promise<DeadLetterValue[]> {
  return (await jsonValues<DeadLetterValue>(runtime, 'dlq')).filter((d) => typeof d.reason === 'string');
}

/**
 * Each bad record on a topic a processor reads is one dead letter from each of its readers, with
 * the reason of its kind, the record's origin and its value cut to 64 KiB; none is refused twice.
 * The record is told by its marker in the payload, or by `match` for values too short to carry one.
 */
export function expectRefused(
  dead: readonly DeadLetterValue[],
  topic: string,
  kind: BadKind | { label: string; match: (d: DeadLetterValue) => boolean; reason: RegExp },
  wave = 1,
): void {
  const { label, match, reason } =
    typeof kind === 'string'
      ? {
          label: kind,
          match: (d: DeadLetterValue) => d.payload.includes(marker(kind, topic, wave)),
          reason: reasonFor(kind, topic),
        }
      : kind;
  const refused = dead.filter((d) => d.origin.topic === topic && match(d));
  expect(
    refused.map((d) => d.processor).sort(),
    `${label} on ${topic}: ${JSON.stringify(refused.map((d) => d.reason))}`,
  ).toEqual([...READERS[topic]!].sort());
  for (const d of refused) {
    expect(d.origin.kind).toBe('record');
    expect(d.reason).toMatch(reason);
    expect(Buffer.byteLength(d.payload)).toBeLessThanOrEqual(MAX_PAYLOAD_BYTES);
  }
}

/** No processor crashed on a record: a crash would be retried, then dead-lettered as "processor failed". */
export function expectNoProcessorFailure(dead: readonly DeadLetterValue[]): void {
  expect(dead.filter((d) => /processor failed|timer /.test(d.reason)).map((d) => d.reason)).toEqual([]);
}

/**
 * Every processor's group has committed past every record of its inputs: nothing is stuck behind
 * a bad record (as `run --until-idle` checks before it stops; see topology/runner.ts).
 */
export async function expectCaughtUp(runtime: Runtime): Promise<void> {
  for (const group of new Set(Object.values(READERS).flat())) {
    const topics = Object.keys(READERS).filter((t) => READERS[t]!.includes(group));
    const committed = await runtime.committedOffsets(group, topics);
    for (const topic of topics) {
      for (const [partition, end] of (await runtime.endOffsets(topic)).entries()) {
        const at = committed.get(partitionKey(topic, partition)) ?? 0;
        const left = at < end ? await runtime.read(topic, partition, at, 1) : [];
        expect(left, `${group} on ${topic}/${partition}: committed ${at} of ${end}`).toEqual([]);
      }
    }
  }
}

/**
 * The valid records produced by hand came out of their stages: each article gave questions, and
 * every question (theirs and the hand-made candidates) was graded, accepted or rejected; every
 * accepted one (the hand-made graded QA too) was classified; the sampler's last mix counts every
 * classified QA (the hand-made one too).
 */
export async function expectGoodFlowed(runtime: Runtime, articleIds: readonly string[]): Promise<void> {
  type Qa = { id: string; articleId: string };
  const candidates = (await jsonValues<Partial<Qa>>(runtime, 'qa.candidates')).filter(
    (c): c is Qa => typeof c.articleId === 'string',
  );
  const accepted = (await jsonValues<{ candidate?: Qa }>(runtime, 'qa.graded')).flatMap((g) =>
    g.candidate ? [g.candidate.id] : [],
  );
  const rejected = (await jsonValues<{ candidate?: Qa }>(runtime, 'qa.rejected')).flatMap((g) =>
    g.candidate ? [g.candidate.id] : [],
  );
  const classifiedIds = (
    await jsonValues<{ candidate?: Qa; classification?: unknown }>(runtime, 'qa.classified')
  )
    .filter((c) => c.candidate && c.classification)
    .map((c) => c.candidate!.id);
  for (const id of articleIds)
    expect(
      candidates.some((c) => c.articleId === id),
      `questions from ${id}`,
    ).toBe(true);
  const graded = new Set([...accepted, ...rejected]);
  const ours = candidates.filter((c) => articleIds.includes(c.articleId)).map((c) => c.id);
  for (const id of [...ours, ...GOOD.candidates.map((c) => c.id)]) expect(graded, id).toContain(id);
  const classified = new Set(classifiedIds);
  for (const id of accepted) expect(classified, id).toContain(id);
  expect(classified).toContain(GOOD.graded.candidate.id);
  expect(classifiedIds).toContain(GOOD.classified.candidate.id);
  const mixes = (
    await jsonValues<{ version?: number; metrics?: { items: number; heldOut: number } }>(runtime, 'mix.state')
  ).filter((m) => m.metrics);
  expect(mixes.length).toBeGreaterThan(0);
  const last = mixes.reduce((a, b) => ((b.version ?? 0) > (a.version ?? 0) ? b : a));
  // The sampler counts the dataset: classified QA less those withdrawn since (an accepted QA that a
  // hand-produced twin earlier in dedup order overtook, when it reached the band owners later).
  const withdrawn = new Set(
    (await jsonValues<{ qaId?: string }>(runtime, 'qa.withdrawn')).flatMap((w) => (w.qaId ? [w.qaId] : [])),
  );
  expect(last.metrics!.items + last.metrics!.heldOut).toBe(
    classifiedIds.filter((id) => !withdrawn.has(id)).length,
  );
}

/**
 * The pipeline's test LLM server, with a hook run once at its first call: the run is under way
 * then, and what the hook appends arrives mid-run (the run's summary counts dead letters from then on).
 */
interface MidRunServer {
  server: LlmServer;
  /** Runs `hook` at the next call. */
  atFirstCall(hook: () => Promise<void>): void;
  /** Whether the hook has run. */
  called(): boolean;
}

/** startMidRunServer for a describe block: started before its tests, stopped after them. */
export function midRunServerForSuite(): () => MidRunServer {
  let hooked: MidRunServer | undefined;
  beforeAll(async () => {
    hooked = await startMidRunServer();
  });
  afterAll(async () => {
    await hooked?.server.stop();
  });
  return () => hooked!;
}

async function startMidRunServer(): Promise<MidRunServer> {
  let pending: (() => Promise<void>) | null = null;
  const server = await start({
    responder: async (request, context) => {
      const hook = pending;
      pending = null;
      await hook?.();
      return pipelineResponder(request, context);
    },
  });
  return {
    server,
    atFirstCall: (hook) => {
      pending = hook;
    },
    called: () => pending === null,
  };
}
