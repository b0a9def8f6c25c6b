// Manual smoke check of a running broker with kafkajs (from the repo's node_modules):
// creates a topic, commits one transaction and aborts another, then reads back with
// read_committed and expects only the committed records.
//   node deploy/kafka/check-txn.mjs [bootstrap=127.0.0.1:19092] [topic] [expectAtLeast]
// With a topic name that already exists it only re-reads (used for the restart check).
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(path.join(repo, 'package.json'));
const { Kafka, logLevel } = require('kafkajs');

const broker = process.argv[2] ?? '127.0.0.1:19092';
const topic = process.argv[3] ?? `deploy-smoke-${Date.now()}`;
const expectAtLeast = Number(process.argv[4] ?? 2);
const kafka = new Kafka({ clientId: 'deploy-smoke', brokers: [broker], logLevel: logLevel.WARN });

const admin = kafka.admin();
await admin.connect();
const created = await admin.createTopics({
  topics: [{ topic, numPartitions: 1, replicationFactor: 1 }],
  waitForLeaders: true,
});
await admin.disconnect();

if (created) {
  const producer = kafka.producer({
    transactionalId: `deploy-smoke-tx-${topic}`,
    idempotent: true,
    maxInFlightRequests: 1,
  });
  await producer.connect();
  let tx = await producer.transaction();
  await tx.send({
    topic,
    messages: [
      { key: 'a', value: 'committed-1' },
      { key: 'b', value: 'committed-2' },
    ],
  });
  await tx.commit();
  tx = await producer.transaction();
  await tx.send({ topic, messages: [{ key: 'c', value: 'aborted' }] });
  await tx.abort();
  await producer.disconnect();
  console.log(`created ${topic}; committed 2 records, aborted 1`);
}

const consumer = kafka.consumer({ groupId: `deploy-smoke-${Date.now()}`, readUncommitted: false });
await consumer.connect();
await consumer.subscribe({ topic, fromBeginning: true });
const seen = [];
await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error(`timeout; saw ${JSON.stringify(seen)}`)), 30000);
  consumer
    .run({
      eachMessage: async ({ message }) => {
        seen.push(message.value.toString());
        if (seen.length >= expectAtLeast) {
          clearTimeout(timer);
          setTimeout(resolve, 1000);
        }
      },
    })
    .catch(reject);
});
await consumer.disconnect();
if (seen.includes('aborted')) throw new Error(`read_committed returned an aborted record: ${seen}`);
console.log(`OK ${topic}: read_committed saw ${JSON.stringify(seen)}`);
