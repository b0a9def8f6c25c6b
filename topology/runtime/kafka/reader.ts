import { randomUUID } from 'node:crypto';
import rdkafka from 'node-rdkafka';
import type { LogRecord } from '../../records.js';
import type { KafkaEndpoint } from './endpoint.js';
import type { KafkaNames } from './names.js';
import type { StampSeal } from './stamp-seal.js';
import { rdkafkaRecord, type ValueWire } from './wire.js';

/**
 * Reads one partition from an offset up to its committed end, without a consumer group: what
 * `consume`, tests and state restore need. Built on node-rdkafka because it can assign a
 * partition directly and reports the end of a partition (read_committed: the last stable offset).
 * Topic names in and out are the engine's.
 */
export class PartitionReader {
  private readonly consumer: rdkafka.KafkaConsumer;
  private eof = false;
  /** The partition being read (Kafka topic name): an end reported for another is stale. */
  private reading: { topic: string; partition: number } | null = null;

  private constructor(
    endpoint: KafkaEndpoint,
    private readonly wire: ValueWire,
    private readonly names: KafkaNames,
    private readonly seal: StampSeal,
  ) {
    this.consumer = new rdkafka.KafkaConsumer(
      {
        'group.id': names.readerGroup(randomUUID()),
        ...endpoint.rdkafka(),
        'enable.auto.commit': false,
        'enable.partition.eof': true,
        'isolation.level': 'read_committed',
        'fetch.wait.max.ms': 50,
        // State restore reads whole changelogs: let each fetch bring a lot.
        'fetch.max.bytes': 64 * 1024 * 1024,
        'max.partition.fetch.bytes': 16 * 1024 * 1024,
      },
      { 'auto.offset.reset': 'earliest' },
    );
    this.consumer.on('partition.eof', (e: { topic: string; partition: number }) => {
      if (e.topic === this.reading?.topic && e.partition === this.reading.partition) this.eof = true;
    });
    this.consumer.setDefaultConsumeTimeout(200);
  }

  static async open(
    endpoint: KafkaEndpoint,
    wire: ValueWire,
    names: KafkaNames,
    seal: StampSeal,
  ): Promise<PartitionReader> {
    const reader = new PartitionReader(endpoint, wire, names, seal);
    await new Promise<void>((resolve, reject) =>
      reader.consumer.connect({}, (err) => (err ? reject(err) : resolve())),
    );
    return reader;
  }

  /** A reader serves one read at a time. */
  private busy: Promise<unknown> = Promise.resolve();

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.busy.then(fn, fn);
    this.busy = run.catch(() => {});
    return run;
  }

  read(topic: string, partition: number, fromOffset: number, max: number): Promise<LogRecord[]> {
    return this.exclusive(async () => {
      const out: LogRecord[] = [];
      await this.scan(topic, partition, fromOffset, max, (records) => {
        for (const r of records) out.push(r);
      });
      return out.slice(0, max);
    });
  }

  /**
   * Every record from the start of the partition to its committed end, handed over a batch at a
   * time. Use a reader for this once per partition: librdkafka may still deliver an earlier
   * read's end-of-partition event, which would end this one early.
   */
  readToEnd(topic: string, partition: number, each: (records: readonly LogRecord[]) => void): Promise<void> {
    return this.exclusive(() => this.scan(topic, partition, 0, Number.POSITIVE_INFINITY, each));
  }

  private async scan(
    topic: string,
    partition: number,
    fromOffset: number,
    max: number,
    each: (records: readonly LogRecord[]) => void,
  ): Promise<void> {
    this.eof = false;
    const kafkaTopic = this.names.topic(topic);
    this.reading = { topic: kafkaTopic, partition };
    this.consumer.assign([{ topic: kafkaTopic, partition, offset: fromOffset }]);
    let count = 0;
    // No end within 30 s of no progress: the partition is stuck behind an open transaction.
    let deadline = Date.now() + 30_000;
    try {
      while (count < max && !this.eof) {
        if (Date.now() > deadline)
          throw new Error(`reading ${topic}/${partition} from ${fromOffset}: no end within 30 s`);
        const messages = await new Promise<rdkafka.Message[]>((resolve, reject) =>
          this.consumer.consume(Math.min(10_000, max - count), (err, m) => (err ? reject(err) : resolve(m))),
        );
        const fresh = messages.filter((m) => m.offset >= fromOffset);
        if (!fresh.length) continue;
        deadline = Date.now() + 30_000;
        const values = await this.wire.decode(fresh);
        each(fresh.map((m, i) => rdkafkaRecord(m, values[i]!, topic, this.seal)));
        count += fresh.length;
      }
    } finally {
      this.reading = null;
      this.consumer.unassign();
    }
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.consumer.disconnect(() => resolve()));
  }
}
