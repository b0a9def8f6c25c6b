import { randomUUID } from 'node:crypto';
import kafkajs from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { KafkaRuntime } from '../../topology/runtime/kafka/index.js';
import { conformanceTopology, doubler } from '../conformance/processors.js';
import { readAll, stepUntil, task } from '../conformance/suite.js';
import { KAFKA } from './env.js';

/**
 * A Kafka commit returns before its markers reach the partitions, so the last stable offset lags
 * the records for a moment (here: 6 of 40 reads right after a commit to one partition missed it). What a task
 * committed must be readable when its close returns: the run's summary, `export` and the tests
 * read right after (CI saw the upgrade test read nothing of a committed transaction).
 */
describe('Kafka: what was committed is readable at once', () => {
  it('untilReadable: after each of 30 transactions on one partition, read_committed end offsets include it', async () => {
    const app = `readable-${randomUUID().slice(0, 8)}`;
    const runtime = await KafkaRuntime.open(`kafka://${KAFKA}?client=kafkajs`, { app });
    const kafka = new kafkajs.Kafka({ brokers: [KAFKA], logLevel: kafkajs.logLevel.NOTHING });
    const producer = kafka.producer({
      transactionalId: `${app}-tx`,
      idempotent: true,
      maxInFlightRequests: 1,
    });
    try {
      await runtime.ensureTopics([
        {
          name: 'out',
          partitions: 1,
          schema: null,
          compacted: false,
          retentionMs: null,
          description: 'outputs',
        },
      ]);
      await producer.connect();
      const topic = runtime.names.topic('out');
      for (let i = 0; i < 30; i++) {
        const tx = await producer.transaction();
        const [sent] = await tx.send({ topic, messages: [{ value: String(i) }] });
        await tx.commit();
        await runtime.untilReadable(new Map([[topic, new Set([0])]]));
        // What `export` and the run summary read up to: past the record just committed.
        expect((await runtime.endOffsets('out'))[0]).toBeGreaterThan(Number(sent!.baseOffset));
      }
    } finally {
      await producer.disconnect();
      await runtime.close();
    }
  });

  for (const client of ['kafkajs', 'rdkafka'] as const) {
    it(`${client}: a task's outputs are read in full as soon as its close returns, 5 times over`, async () => {
      const prefix = `readable-${client}-${randomUUID().slice(0, 8)}`;
      const runtime = await KafkaRuntime.open(`kafka://${KAFKA}?client=${client}`, { app: prefix });
      try {
        const topology = conformanceTopology(prefix, (t) => [doubler(t)]);
        await runtime.ensureTopics(topology.topics);
        for (let round = 1; round <= 8; round++) {
          await runtime.append([
            { topic: `${prefix}.in`, key: String(round), value: JSON.stringify({ n: round }) },
          ]);
          const t = await task(runtime, topology, topology.processors[0]!);
          await stepUntil(t, 1);
          await t.close();
          expect(await readAll(runtime, `${prefix}.out`)).toHaveLength(2 * round);
        }
      } finally {
        await runtime.close();
      }
    });
  }
});
