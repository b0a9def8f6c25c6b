import kafkajs from 'kafkajs';
import type { LogRecord, OutgoingRecord } from '../../records.js';
import { partitionForKey } from '../../records.js';
import type { TopicSpec } from '../../topology.js';
import type { LogTask, Runtime, TaskSpec } from '../types.js';
import { type KafkaUrl, parseKafkaUrl } from './config.js';
import type { KafkaConnection } from './connection.js';
import { KafkajsTask } from './kafkajs-task.js';
import { RdkafkaTask } from './rdkafka-task.js';
import { PartitionReader } from './reader.js';
import { ChangelogState } from './state.js';
import { plainJson, RegistryWire, VALIDATED_AS_HEADER, type ValueWire } from './wire.js';

const { Kafka, logLevel, ConfigResourceTypes } = kafkajs;

/**
 * The distributed runtime: topics, offsets and consumer groups live in Kafka; a step is a Kafka
 * transaction (outputs, changelog records and input offsets together); state stores are restored
 * from compacted changelog topics. Two clients: kafkajs and node-rdkafka (`?client=`).
 */
export class KafkaRuntime implements Runtime, KafkaConnection {
  readonly name: string;
  readonly kafka: kafkajs.Kafka;
  private readonly admin: kafkajs.Admin;
  private readonly producer: kafkajs.Producer;
  private reader?: PartitionReader;
  private readonly partitionCounts = new Map<string, number>();
  private readonly tasks = new Set<LogTask>();
  private nullKeyCounter = 0;

  private constructor(
    readonly url: KafkaUrl,
    readonly wire: ValueWire,
  ) {
    this.name = `kafka/${url.client}`;
    this.kafka = new Kafka({
      clientId: 'bioalchemy',
      brokers: url.brokers,
      logLevel: logLevel.NOTHING,
      retry: { retries: 10 },
    });
    this.admin = this.kafka.admin();
    this.producer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  }

  static async open(url: string): Promise<KafkaRuntime> {
    const parsed = parseKafkaUrl(url);
    const runtime = new KafkaRuntime(parsed, parsed.registry ? new RegistryWire(parsed.registry) : plainJson);
    await runtime.admin.connect();
    await runtime.producer.connect();
    return runtime;
  }

  async ensureTopics(topics: readonly TopicSpec[]): Promise<void> {
    const existing = new Set(await this.admin.listTopics());
    const missing = topics.filter((t) => !existing.has(t.name));
    if (missing.length) {
      await this.admin.createTopics({
        waitForLeaders: true,
        topics: missing.map((t) => ({
          topic: t.name,
          numPartitions: t.partitions,
          replicationFactor: 1,
          configEntries: [
            { name: 'cleanup.policy', value: t.compacted ? 'compact' : 'delete' },
            { name: 'retention.ms', value: String(t.retentionMs ?? -1) },
          ],
        })),
      });
    }
    const present = topics.filter((t) => existing.has(t.name));
    if (present.length) {
      const meta = await this.admin.fetchTopicMetadata({ topics: present.map((t) => t.name) });
      const configs = await this.admin.describeConfigs({
        includeSynonyms: false,
        resources: present.map((t) => ({
          type: ConfigResourceTypes.TOPIC,
          name: t.name,
          configNames: ['cleanup.policy'],
        })),
      });
      for (const t of present) {
        const partitions = meta.topics.find((m) => m.name === t.name)?.partitions.length ?? 0;
        const policy = configs.resources.find((r) => r.resourceName === t.name)?.configEntries[0]
          ?.configValue;
        if (partitions !== t.partitions || (policy === 'compact') !== t.compacted) {
          throw new Error(
            `topic "${t.name}" exists with ${partitions} partitions, cleanup.policy=${policy}; ` +
              `the topology wants ${t.partitions}${t.compacted ? ', compacted' : ''}`,
          );
        }
      }
    }
    for (const t of topics) this.partitionCounts.set(t.name, t.partitions);
    await this.wire.register(topics);
  }

  async partitionsOf(topic: string): Promise<number> {
    let n = this.partitionCounts.get(topic);
    if (n === undefined) {
      const meta = await this.admin.fetchTopicMetadata({ topics: [topic] });
      n = meta.topics[0]?.partitions.length ?? 0;
      if (!n) throw new Error(`unknown topic "${topic}"`);
      this.partitionCounts.set(topic, n);
    }
    return n;
  }

  /** Each record's partition, with the embedded log's placement: murmur2 of the key; null keys round-robin. */
  async partitionsFor(records: readonly OutgoingRecord[]): Promise<number[]> {
    const counts = new Map<string, number>();
    for (const r of records) if (!counts.has(r.topic)) counts.set(r.topic, await this.partitionsOf(r.topic));
    return records.map((r) => {
      if (r.partition !== undefined) return r.partition;
      const n = counts.get(r.topic)!;
      return r.key === null ? this.nullKeyCounter++ % n : partitionForKey(r.key, n);
    });
  }

  async append(records: readonly OutgoingRecord[]): Promise<void> {
    for (const chunk of await this.sendChunks(records))
      await this.producer.sendBatch({ acks: -1, topicMessages: chunk });
  }

  /**
   * Records as kafkajs topic messages, cut into requests that keep each partition's share under
   * the broker's default 1 MB record-batch limit (kafkajs sends one batch per partition a request).
   */
  async sendChunks(records: readonly OutgoingRecord[]): Promise<kafkajs.TopicMessages[][]> {
    const LIMIT = 768 * 1024;
    const chunks: kafkajs.TopicMessages[][] = [];
    let current = new Map<string, kafkajs.Message[]>();
    let bytes = new Map<string, number>();
    const flush = () => {
      if (current.size) chunks.push([...current].map(([topic, messages]) => ({ topic, messages })));
      current = new Map();
      bytes = new Map();
    };
    const partitions = await this.partitionsFor(records);
    const values = await this.wire.encode(records);
    for (const [i, r] of records.entries()) {
      const partition = partitions[i]!;
      const value = values[i]!;
      const slot = `${r.topic}\u0000${partition}`;
      if ((bytes.get(slot) ?? 0) + value.length > LIMIT) flush();
      bytes.set(slot, (bytes.get(slot) ?? 0) + value.length);
      const messages = current.get(r.topic) ?? [];
      const headers = r.validatedAs ? { [VALIDATED_AS_HEADER]: r.validatedAs } : undefined;
      messages.push({ key: r.key, value, partition, headers });
      current.set(r.topic, messages);
    }
    flush();
    return chunks;
  }

  async read(topic: string, partition: number, fromOffset: number, max: number): Promise<LogRecord[]> {
    this.reader ??= await PartitionReader.open(this.url.brokers, this.wire);
    return this.reader.read(topic, partition, fromOffset, max);
  }

  async endOffsets(topic: string): Promise<number[]> {
    const offsets = await this.admin.fetchTopicOffsets(topic);
    return offsets.sort((a, b) => a.partition - b.partition).map((o) => Number(o.high));
  }

  /** Committed offsets of a consumer group, per partition of each topic (0 where none). */
  async committedOffsets(group: string, topics: readonly string[]): Promise<Map<string, number>> {
    const result = new Map<string, number>();
    for (const entry of await this.admin.fetchOffsets({ groupId: group, topics: [...topics] })) {
      for (const p of entry.partitions)
        result.set(`${entry.topic}\u0000${p.partition}`, Math.max(0, Number(p.offset)));
    }
    return result;
  }

  async openTask(spec: TaskSpec): Promise<LogTask> {
    for (const topic of spec.topics) await this.partitionsOf(topic);
    const state = new ChangelogState(this, spec.group, spec.stores);
    await state.ensureTopics();
    const task =
      this.url.client === 'kafkajs'
        ? await KafkajsTask.open(this, spec, state)
        : await RdkafkaTask.open(this, spec, state);
    this.tasks.add(task);
    return task;
  }

  forget(task: LogTask): void {
    this.tasks.delete(task);
  }

  async close(): Promise<void> {
    for (const t of [...this.tasks]) await t.close();
    await this.reader?.close();
    await this.producer.disconnect();
    await this.admin.disconnect();
  }
}
