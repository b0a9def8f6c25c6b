import { randomUUID } from 'node:crypto';
import { type Compatibility, SchemaRegistryClient } from '@confluentinc/schemaregistry';
import kafkajs from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { registrySchemaOf, subjectOf } from '../../schemas/registry-subjects.js';
import { KafkaRuntime } from '../../topology/runtime/kafka/index.js';
import { KafkaNames } from '../../topology/runtime/kafka/names.js';
import { checkSubjects } from '../../topology/runtime/kafka/registry-check.js';
import {
  expectPreviousRecordsRead,
  PREVIOUS,
  previousRecords,
  probeTopology,
} from '../upgrade/previous-release.js';
import { KAFKA, SCHEMA_REGISTRY } from './env.js';

/** A Confluent wire-format value: magic byte 0, the schema id, the JSON. */
const framed = (id: number, json: string) => {
  const header = Buffer.alloc(5);
  header.writeInt32BE(id, 1);
  return Buffer.concat([header, Buffer.from(json)]);
};

/**
 * Issue 32: an upgrade on Kafka with the registry. The previous release's deployment is made as it
 * was: its schemas registered as `<topic>-value` with no rule of their own (the project's registry
 * ran NONE then),
 * its records written in the wire format with those ids. The new code then starts: it registers
 * its schemas under BACKWARD, and reads every old record.
 */
describe(`upgrade from ${PREVIOUS.release} (Kafka, Schema Registry)`, () => {
  for (const client of ['kafkajs', 'rdkafka'] as const) {
    it(`${client}: registers under BACKWARD on a registry holding the old schemas, and reads the old records`, async () => {
      const app = `upgrade-${client}-${randomUUID().slice(0, 8)}`;
      const registry = new SchemaRegistryClient({ baseURLs: [SCHEMA_REGISTRY] });
      const topology = probeTopology();
      const names = new KafkaNames(app);
      const producer = new kafkajs.Kafka({ brokers: [KAFKA], logLevel: kafkajs.logLevel.NOTHING }).producer();
      // The topics as the old deployment made them (no registry here: nothing is registered).
      const bare = await KafkaRuntime.open(`kafka://${KAFKA}?client=${client}`, { app });
      let runtime: KafkaRuntime | null = null;
      try {
        await bare.ensureTopics(topology.topics);
        const ids = new Map<string, number>();
        for (const [topic, { jsonSchema }] of Object.entries(PREVIOUS.topics)) {
          const subject = `${names.topic(topic)}-value`;
          ids.set(
            topic,
            await registry.register(subject, { schemaType: 'JSON', schema: JSON.stringify(jsonSchema) }),
          );
        }
        await producer.connect();
        for (const r of previousRecords())
          await producer.send({
            topic: names.topic(r.topic),
            // The old stamp header, unsealed as that release wrote it: read as no stamp at all.
            messages: [
              {
                key: r.key,
                value: framed(ids.get(r.topic)!, r.value),
                headers: { 'bioalchemy-validated-as': r.validatedAs! },
              },
            ],
          });

        runtime = await KafkaRuntime.open(
          `kafka://${KAFKA}?client=${client}&registry=${encodeURIComponent(SCHEMA_REGISTRY)}`,
          { app },
        );
        await runtime.ensureTopics(topology.topics);
        for (const t of topology.topics) {
          if (!t.schema) continue;
          const subject = subjectOf(names.topic(t.name), t.schema);
          expect([subject, await registry.getCompatibility(subject)]).toEqual([subject, 'BACKWARD']);
        }
        // A second start (a rolling restart) registers the same schemas again: nothing to refuse.
        await runtime.ensureTopics(topology.topics);
        const checks = await checkSubjects(
          { baseURLs: [SCHEMA_REGISTRY] },
          names,
          topology.topics,
          'BACKWARD',
        );
        expect(checks.filter((c) => c.verdict !== 'unchanged')).toEqual([]);
        expect(checks.find((c) => c.topic === 'rollout.batches')!.earlier).toEqual([
          `${names.topic('rollout.batches')}-value`,
        ]);
        // Why a new subject: under BACKWARD the old one refuses the new schemas (its open content
        // model allowed any property, so no property can be added, and the lease replaced the batch).
        for (const topic of ['qa.candidates', 'rollout.batches']) {
          const old = `${names.topic(topic)}-value`;
          await registry.updateCompatibility(old, 'BACKWARD' as Compatibility);
          const schema = registrySchemaOf(topology.topics.find((t) => t.name === topic)!.schema!);
          expect(await registry.testSubjectCompatibility(old, { schemaType: 'JSON', schema })).toBe(false);
        }

        await expectPreviousRecordsRead(runtime, topology);
      } finally {
        await producer.disconnect();
        await runtime?.close();
        await bare.close();
        for (const s of await registry.getAllSubjects())
          if (s.startsWith(`${app}.`)) await registry.deleteSubject(s).catch(() => {});
      }
    });
  }
});
