import { randomUUID } from 'node:crypto';
import rdkafka from 'node-rdkafka';
import type { KafkaEndpoint } from './endpoint.js';
import type { KafkaNames } from './names.js';

/** Kafka topic name -> partitions a task wrote to. */
export type WrittenPartitions = ReadonlyMap<string, ReadonlySet<number>>;

/** Adds a record's partition to what a task wrote (Kafka topic names). */
export function noteWritten(written: Map<string, Set<number>>, kafkaTopic: string, partition: number): void {
  const some = written.get(kafkaTopic);
  if (some) some.add(partition);
  else written.set(kafkaTopic, new Set([partition]));
}

/**
 * Waits until a reader of committed records only (read_committed) reaches what was written.
 *
 * Why: a transaction's commit returns once its coordinator has decided it; the markers that make
 * its records readable reach the partitions after that (KIP-98: the coordinator writes the
 * markers to the partitions after it has answered the producer's EndTxn). Until then the partition's last stable
 * offset stays below the records, so a run summary, an export or a test that reads right after a
 * task closed found its last transaction empty. The check: the high watermark now (every record
 * written, read_uncommitted) against the last stable offset (what a read_committed reader reaches),
 * polled until the one reaches the other.
 */
export class ReadableWait {
  private constructor(
    /** Sees every record: its offset queries answer the high watermark. */
    private readonly uncommitted: rdkafka.KafkaConsumer,
    /** Sees committed records only: its offset queries answer the last stable offset. */
    private readonly committed: rdkafka.KafkaConsumer,
  ) {}

  static async open(endpoint: KafkaEndpoint, names: KafkaNames): Promise<ReadableWait> {
    // librdkafka's offset queries follow the client's isolation level. (Not the runtime's kafkajs
    // admin: a topic it once asked about stays in its metadata, and after `reset` deleted the
    // topic every later admin call failed on it.)
    const [uncommitted, committed] = await Promise.all(
      (['read_uncommitted', 'read_committed'] as const).map(async (isolation) => {
        const consumer = new rdkafka.KafkaConsumer(
          {
            'group.id': names.readerGroup(`watermarks-${randomUUID()}`),
            ...endpoint.rdkafka(),
            'enable.auto.commit': false,
            'isolation.level': isolation,
          },
          {},
        );
        await new Promise<void>((resolve, reject) =>
          consumer.connect({}, (err) => (err ? reject(err) : resolve())),
        );
        return consumer;
      }),
    );
    return new ReadableWait(uncommitted!, committed!);
  }

  /**
   * Resolves true when each partition's last stable offset has reached its high watermark as it
   * was at the call; false when `withinMs` passed first (a transaction still open on one of them,
   * another writer's or one left by a crash).
   */
  async until(written: WrittenPartitions, withinMs: number): Promise<boolean> {
    const targets: { topic: string; partition: number; end: number }[] = [];
    for (const [topic, partitions] of written)
      for (const partition of partitions)
        targets.push({ topic, partition, end: await highOffset(this.uncommitted, topic, partition) });
    const deadline = Date.now() + withinMs;
    for (let behind = targets; ; ) {
      const stable = await Promise.all(behind.map((t) => highOffset(this.committed, t.topic, t.partition)));
      behind = behind.filter((t, i) => stable[i]! < t.end);
      if (!behind.length) return true;
      if (Date.now() > deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async close(): Promise<void> {
    for (const consumer of [this.uncommitted, this.committed])
      await new Promise<void>((resolve) => consumer.disconnect(() => resolve()));
  }
}

/** The partition's end as the client's isolation level sees it, asked of the broker. */
function highOffset(client: rdkafka.KafkaConsumer, topic: string, partition: number): Promise<number> {
  return new Promise((resolve, reject) =>
    client.queryWatermarkOffsets(topic, partition, 10_000, (err, o) =>
      err ? reject(err) : resolve(o.highOffset),
    ),
  );
}
