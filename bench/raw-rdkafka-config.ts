/**
 * node-rdkafka's settings for the raw copies of `npm run bench -- kafka` (bench/kafka.ts, and the
 * worker-thread copy, which takes them through its workerData): an idempotent producer with the
 * engine's linger, and a consumer from the start of the input.
 */
export function rawRdkafkaConfig(broker: string, input: string) {
  return {
    producer: { 'metadata.broker.list': broker, 'enable.idempotence': true, 'linger.ms': 5 },
    consumer: {
      'group.id': `raw-${input}`,
      'metadata.broker.list': broker,
      'enable.auto.commit': true,
      'fetch.wait.max.ms': 50,
    },
    consumerTopic: { 'auto.offset.reset': 'earliest' as const },
  };
}
