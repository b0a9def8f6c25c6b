import type kafkajs from 'kafkajs';
import type { Logger } from 'pino';
import type { LogRecord, OutgoingRecord } from '../../records.js';
import type { TopicSpec } from '../../topology.js';
import type { LogTask } from '../types.js';
import type { KafkaUrl } from './config.js';
import type { KafkaEndpoint } from './endpoint.js';
import type { KafkaNames } from './names.js';
import type { WrittenPartitions } from './readable.js';
import type { StampSeal } from './stamp-seal.js';
import type { ValueWire } from './wire.js';

/**
 * What a task and its changelog state need of the Kafka runtime. The runtime implements it and
 * hands itself to them, so the tasks depend on this interface and not on the runtime class: the
 * runtime module imports the tasks, never the other way round. Topic and group names here are
 * the engine's; `names` gives the prefixed ones Kafka sees.
 */
export interface KafkaConnection {
  readonly url: KafkaUrl;
  /** The brokers and how to reach them, for every client a task opens. */
  readonly endpoint: KafkaEndpoint;
  readonly kafka: kafkajs.Kafka;
  readonly wire: ValueWire;
  /** Seals the stamps of records sent, and keeps only verified stamps of records read. */
  readonly seal: StampSeal;
  readonly names: KafkaNames;
  /** This process's worker id: in transactional ids, static membership, logs and metrics. */
  readonly worker: string;
  readonly log: Logger;
  ensureTopics(topics: readonly TopicSpec[]): Promise<void>;
  partitionsOf(topic: string): Promise<number>;
  partitionsFor(records: readonly OutgoingRecord[]): Promise<number[]>;
  sendChunks(records: readonly OutgoingRecord[]): Promise<kafkajs.TopicMessages[][]>;
  read(topic: string, partition: number, fromOffset: number, max: number): Promise<LogRecord[]>;
  /** Every record of one partition up to its committed end, a batch at a time (state restore). */
  readToEnd(topic: string, partition: number, each: (records: readonly LogRecord[]) => void): Promise<void>;
  committedOffsets(group: string, topics: readonly string[]): Promise<Map<string, number>>;
  /** Waits until read_committed readers reach what a task wrote (its last commit's markers landed). */
  untilReadable(written: WrittenPartitions): Promise<void>;
  /** A closed task tells the runtime, which closes the tasks still open when it closes. */
  forget(task: LogTask): void;
}
