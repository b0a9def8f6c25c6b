import { randomUUID } from 'node:crypto';
import rdkafka from 'node-rdkafka';
import type { LogRecord } from '../../records.js';
import { rdkafkaRecord, type ValueWire } from './wire.js';

/**
 * Reads one partition from an offset up to its committed end, without a consumer group: what
 * `consume`, tests and state restore need. Built on node-rdkafka because it can assign a
 * partition directly and reports the end of a partition (read_committed: the last stable offset).
 */
export class PartitionReader {
  private readonly consumer: rdkafka.KafkaConsumer;
  private eof = false;

  private constructor(
    brokers: string[],
    private readonly wire: ValueWire,
  ) {
    this.consumer = new rdkafka.KafkaConsumer(
      {
        'group.id': `bioalchemy-reader-${randomUUID()}`,
        'metadata.broker.list': brokers.join(','),
        'enable.auto.commit': false,
        'enable.partition.eof': true,
        'isolation.level': 'read_committed',
        'fetch.wait.max.ms': 50,
      },
      { 'auto.offset.reset': 'earliest' },
    );
    this.consumer.on('partition.eof', () => {
      this.eof = true;
    });
    this.consumer.setDefaultConsumeTimeout(200);
  }

  static async open(brokers: string[], wire: ValueWire): Promise<PartitionReader> {
    const reader = new PartitionReader(brokers, wire);
    await new Promise<void>((resolve, reject) =>
      reader.consumer.connect({}, (err) => (err ? reject(err) : resolve())),
    );
    return reader;
  }

  async read(topic: string, partition: number, fromOffset: number, max: number): Promise<LogRecord[]> {
    this.eof = false;
    this.consumer.assign([{ topic, partition, offset: fromOffset }]);
    const out: LogRecord[] = [];
    const deadline = Date.now() + 30_000;
    try {
      while (out.length < max && !this.eof) {
        if (Date.now() > deadline)
          throw new Error(`reading ${topic}/${partition} from ${fromOffset}: no end within 30 s`);
        const messages = await new Promise<rdkafka.Message[]>((resolve, reject) =>
          this.consumer.consume(max - out.length, (err, m) => (err ? reject(err) : resolve(m))),
        );
        const fresh = messages.filter((m) => m.offset >= fromOffset);
        const values = await this.wire.decode(fresh);
        for (const [i, m] of fresh.entries()) out.push(rdkafkaRecord(m, values[i]!));
      }
    } finally {
      this.consumer.unassign();
    }
    return out.slice(0, max);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.consumer.disconnect(() => resolve()));
  }
}
