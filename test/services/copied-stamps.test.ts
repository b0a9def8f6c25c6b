import { randomUUID } from 'node:crypto';
import kafkajs from 'kafkajs';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { Article, DeadLetter } from '../../schemas/index.js';
import { TopicCodecs } from '../../topology/codec.js';
import type { Processor } from '../../topology/processor.js';
import { KafkaRuntime } from '../../topology/runtime/kafka/index.js';
import { defineTopology } from '../../topology/topology.js';
import { readAll, stepUntil, task } from '../conformance/suite.js';
import { sampleArticle } from '../fixtures/records.js';
import { KAFKA, SCHEMA_REGISTRY } from './env.js';

/** Every message of a topic as a plain kafkajs consumer gets it: bytes and headers. */
async function rawMessages(topic: string, n: number): Promise<kafkajs.KafkaMessage[]> {
  const kafka = new kafkajs.Kafka({ brokers: [KAFKA], logLevel: kafkajs.logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: `raw-${randomUUID()}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const out: kafkajs.KafkaMessage[] = [];
  await new Promise<void>((resolve) => {
    void consumer.run({
      eachMessage: async ({ message }) => {
        out.push(message);
        if (out.length >= n) resolve();
      },
    });
  });
  await consumer.disconnect();
  return out;
}

/** Values of the wrong shape, each of which makes the reader below throw a TypeError if it gets it. */
const WRONG_SHAPES = [
  { id: 'doi:10.1/no-sections', title: 'A title' },
  { ...sampleArticle, id: 'doi:10.1/sections-a-string', sections: 'not a list' },
  { ...sampleArticle, id: 'doi:10.1/null-sections', sections: null },
];

/**
 * An `extract` that trusts its input's shape as any processor may: what the issue saw run on
 * data nobody validated (dead letters `processor-failed` naming a TypeError).
 */
function extractLike(): Processor {
  return {
    name: 'extract',
    reads: ['articles'],
    writes: ['passages'],
    stores: [],
    async process(batch, ctx) {
      for (const r of batch)
        ctx.emit('passages', r.key, { lengths: (r.value as Article).sections.map((s) => s.text.length) });
    },
  };
}

/**
 * Issue 32: three wrong-shaped records written to the articles topic by a plain kafkajs producer,
 * copying a real record's headers (its stamp and seal) and its wire prefix (magic byte, schema
 * id), are dead letters coded `invalid-input` naming their schema error, before any processor
 * sees them; the real record is trusted. With no stamp keys, nothing is trusted.
 */
describe('records from other writers with a copied stamp (Kafka, Schema Registry)', () => {
  for (const client of ['kafkajs', 'rdkafka'] as const) {
    for (const keys of [['copied-stamps-key-0123456789'], []] as const) {
      it(`${client}, ${keys.length ? 'stamp keys set' : 'no stamp key'}: wrong shapes are validation dead letters`, async () => {
        const app = `stamps-${client}-${randomUUID().slice(0, 8)}`;
        const log = `kafka://${KAFKA}?client=${client}&registry=${encodeURIComponent(SCHEMA_REGISTRY)}`;
        let logged = '';
        const logger = pino(
          { level: 'trace' },
          {
            write: (line: string) => {
              logged += line;
            },
          },
        );
        const runtime = await KafkaRuntime.open(log, { app, stampKeys: keys, log: logger });
        const topology = defineTopology({
          topics: [
            { name: 'articles', partitions: 1, schema: 'article' },
            { name: 'passages', partitions: 1, schema: null },
            { name: 'dlq', partitions: 1, schema: 'dead-letter' },
          ],
          processors: [extractLike()],
          deadLetterTopic: 'dlq',
        });
        const producer = new kafkajs.Kafka({
          brokers: [KAFKA],
          logLevel: kafkajs.logLevel.NOTHING,
        }).producer();
        try {
          await runtime.ensureTopics(topology.topics);
          const article = Article.parse(sampleArticle);
          const stamp = new TopicCodecs(topology).stampOf('articles');
          await runtime.append([
            { topic: 'articles', key: article.id, value: JSON.stringify(article), validatedAs: stamp },
          ]);
          const [real] = await rawMessages(`${app}.articles`, 1);
          expect(real!.value![0]).toBe(0);
          // One header, the stamp and its seal; none without a key.
          if (keys.length) expect(Object.keys(real!.headers!)).toEqual(['bioalchemy-validated-as']);
          else expect(real!.headers ?? {}).toEqual({});
          const prefix = real!.value!.subarray(0, 5);
          await producer.connect();
          await producer.send({
            topic: `${app}.articles`,
            messages: WRONG_SHAPES.map((v) => ({
              key: v.id,
              value: Buffer.concat([prefix, Buffer.from(JSON.stringify(v))]),
              headers: real!.headers,
            })),
          });
          const t = await task(runtime, topology, topology.processors[0]!, 10);
          await stepUntil(t, 4);
          await t.close();
          // The project's own record went through; nothing else reached the processor.
          expect((await readAll(runtime, 'passages')).map((r) => r.key)).toEqual([article.id]);
          const dead = (await readAll(runtime, 'dlq')).map((r) => DeadLetter.parse(r.value));
          expect(dead.map((d) => d.code)).toEqual(['invalid-input', 'invalid-input', 'invalid-input']);
          for (const d of dead) {
            expect(d.reason).toMatch(/^invalid input: articles: (.*; )?sections: /);
            expect(d.reason).not.toMatch(/TypeError/);
          }
          expect(dead.map((d) => (JSON.parse(d.payload) as { id: string }).id).sort()).toEqual(
            WRONG_SHAPES.map((v) => v.id).sort(),
          );
          // The start says whether stamps are sealed, and never shows a key.
          expect(logged).toMatch(keys.length ? /stamps sealed and verified/ : /stamps are not trusted/);
          for (const key of keys) expect(logged).not.toContain(key.slice(0, 12));
        } finally {
          await producer.disconnect();
          await runtime.close();
        }
      });
    }
  }
});
