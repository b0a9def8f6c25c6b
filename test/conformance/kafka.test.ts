import { randomUUID } from 'node:crypto';
import { KafkaRuntime } from '../../topology/runtime/kafka/index.js';
import { KAFKA } from '../services/env.js';
import { runtimeConformance } from './suite.js';

for (const client of ['kafkajs', 'rdkafka'] as const) {
  const url = `kafka://${KAFKA}?client=${client}`;
  runtimeConformance(`kafka (${client})`, {
    url: () => url,
    open: () => KafkaRuntime.open(url),
    kills: 10,
    prefix: () => `c${client}-${randomUUID().slice(0, 8)}`,
  });
}
