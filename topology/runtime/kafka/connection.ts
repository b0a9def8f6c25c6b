import type kafkajs from 'kafkajs';
import type { LogRecord, OutgoingRecord } from '../../records.js';
import type { TopicSpec } from '../../topology.js';
import type { LogTask } from '../types.js';
import type { KafkaUrl } from './config.js';
import type { ValueWire } from './wire.js';

/**
 * What a task and its changelog state need of the Kafka runtime. The runtime implements it and
 * hands itself to them, so the tasks depend on this interface and not on the runtime class: the
 * runtime module imports the tasks, never the other way round.
 */
export interface KafkaConnection {
  readonly url: KafkaUrl;
  readonly kafka: kafkajs.Kafka;
  readonly wire: ValueWire;
  ensureTopics(topics: readonly TopicSpec[]): Promise<void>;
  partitionsOf(topic: string): Promise<number>;
  partitionsFor(records: readonly OutgoingRecord[]): Promise<number[]>;
  sendChunks(records: readonly OutgoingRecord[]): Promise<kafkajs.TopicMessages[][]>;
  read(topic: string, partition: number, fromOffset: number, max: number): Promise<LogRecord[]>;
  committedOffsets(group: string, topics: readonly string[]): Promise<Map<string, number>>;
  /** A closed task tells the runtime, which closes the tasks still open when it closes. */
  forget(task: LogTask): void;
}
