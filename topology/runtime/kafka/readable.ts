import { randomUUID } from 'node:crypto';
import rdkafka from 'node-rdkafka';

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
  private constructor(private readonly uncommitted: rdkafka.KafkaConsumer) {}

  static async open(brokers: readonly string[]): Promise<ReadableWait> {
    const consumer = new rdkafka.KafkaConsumer(
      {
        'group.id': `bioalchemy-watermarks-${randomUUID()}`,
        'metadata.broker.list': brokers.join(','),
        'enable.auto.commit': false,
        // librdkafka's offset queries follow the client's isolation level: this one sees every record.
        'isolation.level': 'read_uncommitted',
      },
      {},
    );
    await new Promise<void>((resolve, reject) =>
      consumer.connect({}, (err) => (err ? reject(err) : resolve())),
    );
    return new ReadableWait(consumer);
  }

  /**
   * Resolves when each partition's last stable offset (from `stableEnds`, read_committed) has
   * reached its high watermark as it was at the call; false when `withinMs` passed first (a
   * transaction still open on one of them, another writer's or one left by a crash).
   */
  async until(
    written: WrittenPartitions,
    stableEnds: (kafkaTopic: string) => Promise<number[]>,
    withinMs: number,
  ): Promise<boolean> {
    const targets: { topic: string; partition: number; end: number }[] = [];
    for (const [topic, partitions] of written)
      for (const partition of partitions)
        targets.push({ topic, partition, end: await this.highWatermark(topic, partition) });
    const deadline = Date.now() + withinMs;
    for (let behind = targets; ; ) {
      const ends = new Map<string, number[]>();
      for (const topic of new Set(behind.map((t) => t.topic))) ends.set(topic, await stableEnds(topic));
      behind = behind.filter((t) => (ends.get(t.topic)![t.partition] ?? 0) < t.end);
      if (!behind.length) return true;
      if (Date.now() > deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  private highWatermark(topic: string, partition: number): Promise<number> {
    return new Promise((resolve, reject) =>
      this.uncommitted.queryWatermarkOffsets(topic, partition, 10_000, (err, o) =>
        err ? reject(err) : resolve(o.highOffset),
      ),
    );
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.uncommitted.disconnect(() => resolve()));
  }
}
