import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import kafkajs from 'kafkajs';
import { describe, expect, it, onTestFinished } from 'vitest';
import { pipelineTopology } from '../../processors/pipeline.js';
import { subjectOf } from '../../schemas/registry-subjects.js';
import { KafkaRuntime } from '../../topology/runtime/kafka/index.js';
import {
  BIG,
  bigNotJson,
  COMPACTED,
  type DeadLetterValue,
  deadLetters,
  expectCaughtUp,
  expectGoodFlowed,
  expectNoProcessorFailure,
  expectRefused,
  GOOD,
  HUGE,
  hugeArticle,
  hugeWrongSchema,
  marker,
  midRunServerForSuite,
  notJsonBytes,
  READERS,
  UNREAD,
  wrongSchema,
} from '../e2e/hand-records.js';
import { cli, runUntilIdle, workspace } from '../e2e/helpers.js';
import { KAFKA, SCHEMA_REGISTRY } from './env.js';

/** A schema id no registry has handed out. */
const UNKNOWN_ID = 0x7fffffff;
const frame = (schemaId: number, payload: Buffer | string) => {
  const header = Buffer.alloc(5);
  header.writeInt32BE(schemaId, 1);
  return Buffer.concat([header, Buffer.from(payload)]);
};

/**
 * Records produced by hand to every topic of the pipeline on Kafka, with a plain kafkajs producer
 * to the app's topics (`<app>.<topic>`), before and during a `run --until-idle`, with each of the
 * runtime's clients. The runtime writes values in the Confluent wire format (Schema Registry), so
 * besides values of the wrong schema, values that are not JSON (not UTF-8 either), 1 MB values,
 * null keys and null values, hand-made frames: a schema id the registry does not know, a known
 * id before bytes that are not JSON, a frame cut short. Unframed JSON is read as it is (a valid
 * record produced so comes through). Each bad record on a topic a processor reads ends as one
 * dead letter per reader with its reason; the run exits 0 with every group committed past every
 * record (none stalls a partition), and the valid records produced beside them come through.
 *
 * Refused at the producer, by the broker:
 * - 10 MB: over the broker's default record limit (message.max.bytes, 1048588 bytes), kept on the
 *   pipeline's topics: a plain producer gets MESSAGE_TOO_LARGE; the runtime's own append (the
 *   `produce` command) refuses it before sending anything, naming the topic and the limit. A topic
 *   raised past it (max.message.bytes) takes it, and the pipeline reads it as the embedded log
 *   does: there is no record size limit of the pipeline's own, so a valid 10 MB article is
 *   processed and a 10 MB value of the wrong schema is a dead letter.
 * - A null key on a compacted topic (mix.state, llm.journal): INVALID_RECORD from the broker; the
 *   runtime's append says the topic is compacted and the record has no key.
 */
describe('records produced by hand to each topic (Kafka, Schema Registry wire format)', () => {
  const hooked = midRunServerForSuite();

  for (const client of ['kafkajs', 'rdkafka'] as const) {
    it(`${client}: dead-letters every bad record with its reason, never stalls, and lets the good ones through`, async () => {
      const app = `hand-${client}-${randomBytes(4).toString('hex')}`;
      const log = `kafka://${KAFKA}?client=${client}&registry=${encodeURIComponent(SCHEMA_REGISTRY)}`;
      const ws = workspace(hooked().server.url, { log, app });
      onTestFinished(() => rmSync(ws.dir, { recursive: true, force: true }));
      const kafka = new kafkajs.Kafka({ brokers: [KAFKA], logLevel: kafkajs.logLevel.NOTHING });
      const producer = kafka.producer();
      const admin = kafka.admin();
      let runtime: KafkaRuntime | null = null;
      try {
        await Promise.all([producer.connect(), admin.connect()]);
        runtime = await KafkaRuntime.open(log, { app });
        await runtime.ensureTopics(pipelineTopology().topics);
        const engine = runtime;
        /** Sends one record by hand; the broker's refusal, if any. */
        const send = async (topic: string, key: string | null, value: Buffer | string | null) => {
          try {
            await producer.send({ topic: `${app}.${topic}`, acks: -1, messages: [{ key, value }] });
            return null;
          } catch (e) {
            return e as kafkajs.KafkaJSProtocolError;
          }
        };
        const schemaId = async (topic: string) => {
          const schema = pipelineTopology().topics.find((t) => t.name === topic)!.schema!;
          const subject = subjectOf(`${app}.${topic}`, schema);
          const response = await fetch(`${SCHEMA_REGISTRY}/subjects/${subject}/versions/latest`);
          return ((await response.json()) as { id: number }).id;
        };

        const [keyed, nullKey] = GOOD.articles;
        const [candidateFramed, candidatePlain] = GOOD.candidates;
        await engine.append([
          { topic: 'articles', key: keyed!.id, value: JSON.stringify(keyed) },
          { topic: 'qa.candidates', key: candidateFramed!.id, value: JSON.stringify(candidateFramed) },
        ]);
        for (const topic of [...Object.keys(READERS), ...UNREAD]) {
          const key = (kind: string) => (COMPACTED.has(topic) ? `hand-${kind}` : null);
          const known = await schemaId(topic);
          expect(await send(topic, 'hand-wrong', wrongSchema(topic))).toBeNull();
          expect(await send(topic, key('not-json'), notJsonBytes(topic))).toBeNull();
          expect(await send(topic, 'hand-big', bigNotJson(topic))).toBeNull();
          expect(
            await send(topic, 'hand-unknown-id', frame(UNKNOWN_ID, wrongSchema(`${topic} unknown-id`))),
          ).toBeNull();
          expect(
            await send(topic, 'hand-frame-not-json', frame(known, notJsonBytes(`${topic} framed`))),
          ).toBeNull();
          expect(await send(topic, 'hand-cut-frame', Buffer.from([0, 0, 1]))).toBeNull();
          expect(await send(topic, 'hand-tombstone', null)).toBeNull();
          // Refused by the broker, whatever the client: 10 MB, and no key on a compacted topic.
          expect((await send(topic, 'hand-huge', hugeWrongSchema(topic)))?.type).toBe('MESSAGE_TOO_LARGE');
          if (COMPACTED.has(topic))
            expect((await send(topic, null, wrongSchema(topic)))?.type).toBe('INVALID_RECORD');
        }
        await engine.append([{ topic: 'articles', key: null, value: JSON.stringify(nullKey) }]);
        // Unframed JSON on a topic of the registry: read as plain JSON.
        expect(await send('qa.candidates', null, JSON.stringify(candidatePlain))).toBeNull();
        await engine.append([
          { topic: 'qa.graded', key: null, value: JSON.stringify(GOOD.graded) },
          {
            topic: 'qa.classified',
            key: GOOD.classified.candidate.id,
            value: JSON.stringify(GOOD.classified),
          },
        ]);

        // The runtime's own producer says what the broker would refuse, and sends nothing.
        await expect(
          engine.append([{ topic: 'qa.candidates', key: 'k', value: hugeWrongSchema('qa.candidates') }]),
        ).rejects.toThrow(
          /^topic "qa\.candidates": a record of \d+ bytes is over the 1048588 bytes the broker takes/,
        );
        await expect(engine.append([{ topic: 'mix.state', key: null, value: '{}' }])).rejects.toThrow(
          /^topic "mix\.state" is compacted .*: the broker refuses a record without a key/,
        );
        const huge = hugeArticle();
        const refused = cli(
          ['produce', 'articles', '--key', 'id', '--config', ws.config],
          `${JSON.stringify(huge)}\n`,
        );
        expect(refused.status).not.toBe(0);
        expect(refused.stderr).toMatch(/topic "articles": a record of \d+ bytes is over the 1048588 bytes/);

        // A topic that allows 16 MB records: 10 MB values reach the pipeline, which has no limit of its own.
        await admin.alterConfigs({
          validateOnly: false,
          resources: [
            {
              type: kafkajs.ConfigResourceTypes.TOPIC,
              name: `${app}.articles`,
              configEntries: [{ name: 'max.message.bytes', value: String(16 * 1024 * 1024) }],
            },
          ],
        });
        await engine.append([{ topic: 'articles', key: huge.id, value: JSON.stringify(huge) }]);
        expect(await send('articles', 'hand-huge', hugeWrongSchema('articles'))).toBeNull();

        // While the run is under way: more bad records (on dlq too, which the run's summary reads)
        // and a good article beside them.
        const midRun = { ...GOOD.articles[0]!, id: 'hand:article-mid-run', contentHash: 'hand-mid-run' };
        hooked().atFirstCall(async () => {
          expect(await send('dlq', null, notJsonBytes('dlq', 2))).toBeNull();
          expect(await send('dlq', 'x', wrongSchema('dlq', 2))).toBeNull();
          expect(await send('articles', null, notJsonBytes('articles', 2))).toBeNull();
          await engine.append([{ topic: 'articles', key: midRun.id, value: JSON.stringify(midRun) }]);
          expect(await send('articles', 'y', wrongSchema('articles', 2))).toBeNull();
        });

        const started = performance.now();
        const run = await runUntilIdle(ws.config);
        const seconds = (performance.now() - started) / 1000;
        expect(run.code, run.stderr).toBe(0);
        expect(hooked().called()).toBe(true);
        expect(run.stdout).toMatch(/not-a-dead-letter.*: not a dead letter/);
        process.stdout.write(`hand records (${client}): run --until-idle took ${seconds.toFixed(1)} s\n`);

        const dead = await deadLetters(engine);
        const wire = (label: string, match: (d: DeadLetterValue) => boolean, reason: RegExp) => ({
          label,
          match,
          reason,
        });
        for (const topic of Object.keys(READERS)) {
          for (const kind of ['wrong-schema', 'not-json', 'big'] as const) expectRefused(dead, topic, kind);
          const unknownId = JSON.parse(wrongSchema(`${topic} unknown-id`)).hand as string;
          expectRefused(
            dead,
            topic,
            wire(
              'unknown schema id',
              (d) => d.payload.includes(unknownId),
              new RegExp(`^invalid input: Confluent wire format: schema id ${UNKNOWN_ID}: `),
            ),
          );
          expectRefused(
            dead,
            topic,
            wire(
              'framed, not JSON',
              (d) => d.payload.includes(marker('not-json', `${topic} framed`)),
              /^invalid input: Confluent wire format: schema id \d+: .*not valid JSON/,
            ),
          );
          expectRefused(
            dead,
            topic,
            wire(
              'cut frame',
              (d) => /shorter than the 5-byte header/.test(d.reason),
              /^invalid input: Confluent wire format: a value of 3 bytes, shorter than the 5-byte header/,
            ),
          );
          expectRefused(
            dead,
            topic,
            wire(
              'null value',
              (d) => d.payload === '',
              /^invalid input: not JSON: Unexpected end of JSON input/,
            ),
          );
        }
        expectRefused(dead, 'articles', 'huge');
        expectRefused(dead, 'articles', 'not-json', 2);
        expectRefused(dead, 'articles', 'wrong-schema', 2);
        for (const topic of UNREAD) expect(dead.filter((d) => d.origin.topic === topic)).toEqual([]);
        expectNoProcessorFailure(dead);
        await expectCaughtUp(engine);
        await expectGoodFlowed(engine, [...GOOD.articles.map((a) => a.id), midRun.id, huge.id]);
        expect(BIG).toBeLessThan(1_048_588);
        expect(HUGE).toBeGreaterThan(1_048_588);
      } finally {
        // Ten-megabyte records on the shared broker's disk: this app's topics go.
        await runtime?.deleteApp().catch(() => {});
        await runtime?.close();
        await producer.disconnect();
        await admin.disconnect();
      }
    }, 240_000);
  }
});
