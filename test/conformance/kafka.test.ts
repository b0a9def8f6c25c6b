import { randomUUID } from 'node:crypto';
import { KafkaRuntime } from '../../topology/runtime/kafka/index.js';
import { runtimeConformance } from './suite.js';

/** The broker started by deploy/kafka/start.sh (through the test global setup, or by hand). */
export const KAFKA = process.env.BIOALCHEMY_KAFKA ?? '127.0.0.1:19092';

for (const client of ['kafkajs', 'rdkafka'] as const) {
  const url = `kafka://${KAFKA}?client=${client}`;
  runtimeConformance(`kafka (${client})`, {
    url: () => url,
    open: () => KafkaRuntime.open(url),
    kills: 10,
    prefix: () => `c${client}-${randomUUID().slice(0, 8)}`,
  });
}
