import { randomUUID } from 'node:crypto';
import kafkajs from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { Article } from '../../schemas/index.js';
import { subjectOf } from '../../schemas/registry-subjects.js';
import { KafkaRuntime } from '../../topology/runtime/kafka/index.js';
import { defineTopology } from '../../topology/topology.js';
import { sampleArticle } from '../fixtures/records.js';
import { KAFKA, SCHEMA_REGISTRY } from './env.js';

/** The raw bytes of the first record of a topic, read with a plain kafkajs consumer. */
async function firstRawValue(topic: string): Promise<Buffer> {
  const kafka = new kafkajs.Kafka({ brokers: [KAFKA], logLevel: kafkajs.logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: `raw-${randomUUID()}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const value = await new Promise<Buffer>((resolve) => {
    void consumer.run({ eachMessage: async ({ message }) => resolve(message.value!) });
  });
  await consumer.disconnect();
  return value;
}

describe('Schema Registry (Confluent-compatible, real server)', () => {
  it('registers each topic schema and writes values in the Confluent wire format', async () => {
    const topic = `registry-${randomUUID().slice(0, 8)}`;
    const topology = defineTopology({
      topics: [
        { name: topic, schema: 'article' },
        { name: 'dlq', schema: 'dead-letter' },
      ],
      processors: [],
    });
    const runtime = await KafkaRuntime.open(
      `kafka://${KAFKA}?registry=${encodeURIComponent(SCHEMA_REGISTRY)}`,
      {
        app: 'registry-test',
      },
    );
    // On Kafka (and so in the registry's subject names) every topic carries the app's prefix.
    const kafkaTopic = `registry-test.${topic}`;
    try {
      await runtime.ensureTopics(topology.topics);
      const subjects = (await (await fetch(`${SCHEMA_REGISTRY}/subjects`)).json()) as string[];
      // The subject of the record kind's generation (schemas/registry-subjects.ts), under BACKWARD.
      const subject = subjectOf(kafkaTopic, 'article');
      expect(subjects).toContain(subject);
      const rule = (await (await fetch(`${SCHEMA_REGISTRY}/config/${subject}`)).json()) as {
        compatibilityLevel: string;
      };
      expect(rule.compatibilityLevel).toBe('BACKWARD');
      const latest = (await (
        await fetch(`${SCHEMA_REGISTRY}/subjects/${subject}/versions/latest`)
      ).json()) as {
        id: number;
        schemaType: string;
        schema: string;
      };
      expect(latest.schemaType).toBe('JSON');
      expect(JSON.parse(latest.schema).properties).toHaveProperty('contentHash');
      // A closed content model: a new optional field is a compatible change under BACKWARD.
      expect(JSON.parse(latest.schema).additionalProperties).toBe(false);

      const article = Article.parse(sampleArticle);
      await runtime.append([{ topic, key: article.id, value: JSON.stringify(article) }]);
      const raw = await firstRawValue(kafkaTopic);
      expect(raw[0]).toBe(0); // magic byte
      expect(raw.readInt32BE(1)).toBe(latest.id);
      expect(JSON.parse(raw.subarray(5).toString('utf8'))).toEqual(article);

      const [back] = await runtime.read(topic, 0, 0, 10);
      expect(JSON.parse(back!.value)).toEqual(article);
    } finally {
      await runtime.close();
    }
  });
});
