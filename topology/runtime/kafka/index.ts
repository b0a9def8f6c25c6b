import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import kafkajs from 'kafkajs';
import pino, { type Logger } from 'pino';
import type { Connection } from '../../../schemas/connection.js';
import type { LogRecord, OutgoingRecord } from '../../records.js';
import { GLOBAL, partitionForKey, partitionKey, TOMBSTONE } from '../../records.js';
import { PARTITIONS_FIXED, type TopicSpec } from '../../topology.js';
import type { LogTask, Runtime, StoredValue, TaskSpec } from '../types.js';
import { explainAccess, KafkaAccessError } from './access-errors.js';
import { probeKafkajs } from './check.js';
import { type KafkaUrl, parseKafkaUrl, SESSION_TIMEOUT_MS } from './config.js';
import type { KafkaConnection } from './connection.js';
import { KafkaEndpoint } from './endpoint.js';
import { KafkajsTask } from './kafkajs-task.js';
import { KafkaNames } from './names.js';
import { RdkafkaTask } from './rdkafka-task.js';
import { ReadableWait, type WrittenPartitions } from './readable.js';
import { PartitionReader } from './reader.js';
import { registryClientConfig } from './registry-client.js';
import { STAMP_KEYS_ENV, StampSeal, VALIDATED_AS_HEADER } from './stamp-seal.js';
import { ChangelogState } from './state.js';
import { plainJson, RegistryWire, type ValueWire } from './wire.js';

const { Kafka, logLevel, ConfigResourceTypes, AssignerProtocol } = kafkajs;

export interface KafkaOptions {
  /** Kafka Streams' application.id: prefixes every topic, group and transactional id (default "bioalchemy"). */
  readonly app?: string;
  /**
   * This process's worker id, unique among the workers of a processor: it names the worker's
   * transactional producer and static group membership, so a restart with the same id fences and
   * replaces its predecessor at once. Default: host name and a random suffix.
   */
  readonly worker?: string;
  readonly log?: Logger;
  /**
   * The keys that seal and verify stamps (see StampSeal): the first signs, all verify. Default:
   * the comma list in BIOALCHEMY_STAMP_KEYS; none means every record read is validated.
   */
  readonly stampKeys?: readonly string[];
  /** How the brokers and the registry are reached (config `connection`); default: plaintext, no credentials. */
  readonly connection?: Pick<Connection, 'kafka' | 'registry'>;
}

/** One member of a consumer group, as `bioalchemy status` shows it. */
export interface GroupMember {
  readonly member: string;
  readonly client: string;
  readonly host: string;
  /** Engine topic names -> partitions. */
  readonly partitions: Record<string, number[]>;
}

export interface GroupStatus {
  /** The group's name in the engine (the processor's). */
  readonly group: string;
  readonly state: string;
  readonly members: readonly GroupMember[];
  /** Records not yet committed per engine topic and partition. */
  readonly lag: Record<string, number[]>;
}

/** Errors of a partition whose leader is being elected or does not serve yet: they pass. */
const LEADER_MOVING = new Set(['NOT_LEADER_FOR_PARTITION', 'LEADER_NOT_AVAILABLE']);

/** How long a compacted topic's segment stays open before the broker may compact it: an hour. */
const COMPACTED_SEGMENT_MS = 3600_000;

/**
 * How long the broker keeps a cache topic's tombstones after compacting the segment that holds
 * them: an hour, not the default day. Only a reader that read the reply before its compaction and
 * reaches the tombstone over an hour later misses it; it then holds a settled reply in memory,
 * which costs memory, never a call. A store's changelog keeps the default: a restore that missed
 * a tombstone would bring a deleted key back.
 */
const CACHE_TOMBSTONE_MS = 3600_000;

/** A topic's config on the broker, the same at creation and when a cache topic's is brought up to date. */
function topicConfig(t: TopicSpec): { name: string; value: string }[] {
  return [
    { name: 'cleanup.policy', value: t.compacted ? 'compact' : 'delete' },
    { name: 'retention.ms', value: String(t.retentionMs ?? -1) },
    // The broker compacts only closed segments, by default a week's: llm.journal, read at
    // start, would hold a week of replies that a newer `null` (settled) already replaced.
    ...(t.compacted ? [{ name: 'segment.ms', value: String(COMPACTED_SEGMENT_MS) }] : []),
    ...(t.cache && t.compacted ? [{ name: 'delete.retention.ms', value: String(CACHE_TOMBSTONE_MS) }] : []),
  ];
}

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
  private reader?: Promise<PartitionReader>;
  private readable?: Promise<ReadableWait>;
  private readonly partitionCounts = new Map<string, number>();
  /** Topics (engine names) the broker keeps by key: it refuses a record without one. */
  private readonly compacted = new Set<string>();
  private readonly tasks = new Set<LogTask>();
  private nullKeyCounter = 0;
  readonly worker: string;
  readonly log: Logger;
  readonly seal: StampSeal;

  private constructor(
    readonly url: KafkaUrl,
    readonly endpoint: KafkaEndpoint,
    readonly wire: ValueWire,
    readonly names: KafkaNames,
    opts: KafkaOptions,
  ) {
    this.name = `kafka/${url.client}`;
    this.worker =
      opts.worker ?? process.env.BIOALCHEMY_WORKER_ID ?? `${hostname()}-${randomUUID().slice(0, 6)}`;
    if (!/^[A-Za-z0-9_.-]+$/.test(this.worker))
      throw new Error(`worker id "${this.worker}": use letters, digits, ".", "_" and "-"`);
    this.log = (opts.log ?? pino({ level: 'silent' })).child({ worker: this.worker });
    this.seal = opts.stampKeys ? new StampSeal(opts.stampKeys) : StampSeal.fromEnv();
    // The count of keys only: a key in a log would let its readers seal records.
    if (this.seal.active) this.log.info({ keys: this.seal.keyCount }, 'stamps sealed and verified');
    else this.log.info(`no ${STAMP_KEYS_ENV}: stamps are not trusted, every record read is validated`);
    this.kafka = new Kafka({
      clientId: 'bioalchemy',
      ...endpoint.kafkajs(),
      logLevel: logLevel.NOTHING,
      retry: { retries: 10 },
    });
    this.admin = this.kafka.admin();
    this.producer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  }

  static async open(url: string, opts: KafkaOptions = {}): Promise<KafkaRuntime> {
    const parsed = parseKafkaUrl(url);
    const names = new KafkaNames(opts.app ?? parsed.app ?? 'bioalchemy');
    const endpoint = KafkaEndpoint.of(parsed.brokers, opts.connection?.kafka, { log: opts.log });
    // Every client the runtime opens is librdkafka's somewhere (the partition reader): a build
    // without what the connection needs is refused here, at start, naming the config key.
    endpoint.rdkafka();
    const registry = opts.connection?.registry;
    const runtime = new KafkaRuntime(
      parsed,
      endpoint,
      parsed.registry
        ? new RegistryWire(registryClientConfig(parsed.registry, registry), names, parsed.compatibility)
        : plainJson,
      names,
      opts,
    );
    runtime.log.info({ endpoint }, 'connecting to Kafka');
    // Refused credentials or certificates fail here in seconds, naming the key to fix; a broker
    // not up yet does not: the connections below wait for it.
    await probeKafkajs(endpoint).catch((e: unknown) => {
      if (e instanceof KafkaAccessError) throw e;
    });
    await runtime.admin.connect().catch(rethrowExplained);
    await runtime.producer.connect().catch(rethrowExplained);
    return runtime;
  }

  /** Waits until every partition of the topics has a leader, for up to a minute; then throws `cause`. */
  private async leadersOf(topics: readonly string[], cause: unknown): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const meta = await this.admin.fetchTopicMetadata({ topics: [...topics] }).catch(() => null);
      if (meta?.topics.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0)))
        return;
      if (Date.now() > deadline) throw cause;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async ensureTopics(topics: readonly TopicSpec[]): Promise<void> {
    await this.ensureTopicsAs(topics).catch(rethrowExplained);
  }

  private async ensureTopicsAs(topics: readonly TopicSpec[]): Promise<void> {
    const existing = new Set(await this.admin.listTopics());
    const missing = topics.filter((t) => !existing.has(this.names.topic(t.name)));
    if (missing.length) {
      const names = missing.map((t) => this.names.topic(t.name));
      await this.admin
        .createTopics({
          waitForLeaders: true,
          topics: missing.map((t) => ({
            topic: this.names.topic(t.name),
            numPartitions: t.partitions,
            replicationFactor: 1,
            configEntries: topicConfig(t),
          })),
        })
        .catch(async (e: unknown) => {
          // kafkajs waits for leaders but gives up on the first "unknown topic" a KRaft broker
          // answers for a topic it created moments before: wait for the leaders here instead.
          if ((e as { type?: string }).type !== 'UNKNOWN_TOPIC_OR_PARTITION') throw e;
          await this.leadersOf(names, e);
        });
    }
    const present = topics.filter((t) => existing.has(this.names.topic(t.name)));
    if (present.length) {
      const meta = await this.admin.fetchTopicMetadata({
        topics: present.map((t) => this.names.topic(t.name)),
      });
      const configs = await this.admin.describeConfigs({
        includeSynonyms: false,
        resources: present.map((t) => ({
          type: ConfigResourceTypes.TOPIC,
          name: this.names.topic(t.name),
          configNames: ['cleanup.policy', 'delete.retention.ms', 'retention.ms'],
        })),
      });
      for (const t of present) {
        const kafkaName = this.names.topic(t.name);
        const partitions = meta.topics.find((m) => m.name === kafkaName)?.partitions.length ?? 0;
        const entries = configs.resources.find((r) => r.resourceName === kafkaName)?.configEntries ?? [];
        const configured = (name: string) => entries.find((e) => e.configName === name)?.configValue;
        const policy = configured('cleanup.policy');
        if (
          (policy === 'compact') === t.compacted &&
          (configured('retention.ms') !== String(t.retentionMs ?? -1) ||
            (t.cache && configured('delete.retention.ms') !== String(CACHE_TOMBSTONE_MS)))
        ) {
          // A topic made before the topology gave it a retention (rollout.batches), or a cache
          // topic before its tombstones had a short life: retention is the topology's to set, and
          // changing it moves no record. alterConfigs sets a topic's whole config: all of it.
          await this.admin.alterConfigs({
            validateOnly: false,
            resources: [{ type: ConfigResourceTypes.TOPIC, name: kafkaName, configEntries: topicConfig(t) }],
          });
        }
        if (t.cache && t.compacted && policy === 'compact' && partitions < t.partitions) {
          await this.growCache(t, partitions);
          continue;
        }
        if (partitions !== t.partitions || (policy === 'compact') !== t.compacted) {
          throw new Error(
            `topic "${kafkaName}" exists with ${partitions} partitions, cleanup.policy=${policy}; ` +
              `the topology wants ${t.partitions}${t.compacted ? ', compacted' : ''}${partitions !== t.partitions ? `: ${PARTITIONS_FIXED}` : ''}`,
          );
        }
      }
    }
    for (const t of topics) {
      this.partitionCounts.set(t.name, t.partitions);
      if (t.compacted) this.compacted.add(t.name);
    }
    await this.wire.register(topics);
  }

  /**
   * Grows a cache topic (see TopicSpec.cache) from `from` partitions to the spec's. Every key it
   * held gets a tombstone first, in its partition: records were placed for `from` partitions, and
   * a reader of the new layout must not hold them (the journal's partition 0 of a cluster from
   * before it had 4 held every reply ever made). A reply dropped so costs at most one call made
   * again. Stopped halfway, the next start does it again: both steps may repeat.
   */
  private async growCache(t: TopicSpec, from: number): Promise<void> {
    this.partitionCounts.set(t.name, from);
    this.compacted.add(t.name);
    const ends = await this.endOffsets(t.name);
    for (const [partition, end] of ends.entries()) {
      for (let offset = 0; offset < end; ) {
        const records = await this.read(t.name, partition, offset, 5000);
        if (records.length === 0) break;
        const keys = new Set(
          records.flatMap((r) => (r.key === null || r.value === TOMBSTONE ? [] : [r.key])),
        );
        if (keys.size > 0)
          await this.append([...keys].map((key) => ({ topic: t.name, key, value: TOMBSTONE, partition })));
        offset = records[records.length - 1]!.offset + 1;
      }
    }
    const kafkaName = this.names.topic(t.name);
    try {
      await this.admin.createPartitions({ topicPartitions: [{ topic: kafkaName, count: t.partitions }] });
    } catch (e) {
      // Workers started at once: another may have grown it first.
      const meta = await this.admin.fetchTopicMetadata({ topics: [kafkaName] });
      if ((meta.topics[0]?.partitions.length ?? 0) < t.partitions) throw e;
    }
    // createPartitions answers before the new partitions' leaders serve (createTopics waits for them).
    const deadline = Date.now() + 60_000;
    for (;;) {
      const offsets = await this.admin.fetchTopicOffsets(kafkaName).catch((e: unknown) => {
        if (Date.now() > deadline) throw e;
        return [];
      });
      if (offsets.length >= t.partitions) break;
      if (Date.now() > deadline) throw new Error(`topic "${kafkaName}": its new partitions have no leader`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // Clients that knew the topic with its old partitions keep that view until their next metadata
    // refresh (minutes): the producer drops records for the new partitions without an error, and
    // the reader reads them as empty. Both start over from fresh metadata.
    await this.producer.disconnect();
    await this.producer.connect();
    const reader = this.reader;
    this.reader = undefined;
    await (await reader)?.close();
  }

  async partitionsOf(topic: string): Promise<number> {
    let n = this.partitionCounts.get(topic);
    if (n === undefined) {
      const meta = await this.admin.fetchTopicMetadata({ topics: [this.names.topic(topic)] });
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
    const chunks = await this.sendChunks(records);
    await this.refuseUnsendable(chunks);
    for (const chunk of chunks) await this.producer.sendBatch({ acks: -1, topicMessages: chunk });
  }

  /**
   * Refuses, before anything is sent, records the broker would refuse part-way through an append
   * (`produce` promises all or nothing), saying why in the user's terms: the broker's own errors
   * ("INVALID_RECORD", "MESSAGE_TOO_LARGE") name neither the topic nor the limit. A record without
   * a key on a compacted topic; a record over the topic's size limit (max.message.bytes, by
   * default the broker's message.max.bytes: about 1 MB). Records produced with another client get
   * the broker's refusal as it is.
   */
  private async refuseUnsendable(chunks: readonly kafkajs.TopicMessages[][]): Promise<void> {
    for (const chunk of chunks) {
      for (const { topic, messages } of chunk) {
        const name = this.names.engineTopic(topic);
        for (const m of messages) {
          if (m.key == null && this.compacted.has(name))
            throw new Error(
              `topic "${name}" is compacted (it keeps the latest value per key): the broker refuses a record without a key`,
            );
          // A record batch of one record: about 70 bytes of framing around key, value and headers.
          let bytes = 70 + byteLength(m.key) + byteLength(m.value);
          for (const [k, v] of Object.entries(m.headers ?? {}))
            bytes += k.length + Buffer.byteLength(String(v));
          // Below what sendChunks puts in one request, never over the broker's default: no need to ask.
          if (bytes <= 768 * 1024) continue;
          const limit = await this.maxMessageBytesOf(topic);
          if (bytes > limit)
            throw new Error(
              `topic "${name}": a record of ${bytes} bytes is over the ${limit} bytes the broker takes ` +
                `(the topic's max.message.bytes, by default the broker's message.max.bytes): nothing appended`,
            );
        }
      }
    }
  }

  /** The largest record batch the broker takes on a topic; asked each time (rarely: see above), as it can change. */
  private async maxMessageBytesOf(kafkaTopic: string): Promise<number> {
    const { resources } = await this.admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: kafkaTopic, configNames: ['max.message.bytes'] }],
    });
    return Number(resources[0]?.configEntries[0]?.configValue ?? 1_048_588);
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
      const sealed = this.seal.sealed(r.validatedAs, value);
      const headers = sealed ? { [VALIDATED_AS_HEADER]: sealed } : undefined;
      messages.push({ key: r.key, value, partition, headers });
      current.set(r.topic, messages);
    }
    flush();
    for (const chunk of chunks) for (const tm of chunk) tm.topic = this.names.topic(tm.topic);
    return chunks;
  }

  async read(topic: string, partition: number, fromOffset: number, max: number): Promise<LogRecord[]> {
    return (await this.partitionReader()).read(topic, partition, fromOffset, max);
  }

  private async partitionReader(): Promise<PartitionReader> {
    this.reader ??= PartitionReader.open(this.endpoint, this.wire, this.names, this.seal);
    return this.reader;
  }

  async readToEnd(
    topic: string,
    partition: number,
    each: (records: readonly LogRecord[]) => void,
  ): Promise<void> {
    // A reader of its own: an end-of-partition event left from an earlier read must not end this one.
    const reader = await PartitionReader.open(this.endpoint, this.wire, this.names, this.seal);
    try {
      await reader.readToEnd(topic, partition, each);
    } finally {
      await reader.close();
    }
  }

  /**
   * Retries what may pass (a partition whose leader is not serving yet) for up to a minute:
   * workers started at once that lost the race to create the topics, or whose partitions had a
   * leader in the metadata that did not serve yet, died at their first read ("This server is not
   * the leader for that topic-partition"); kafkajs's admin does not retry it.
   */
  async endOffsets(topic: string): Promise<number[]> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        const offsets = await this.admin.fetchTopicOffsets(this.names.topic(topic));
        return offsets.sort((a, b) => a.partition - b.partition).map((o) => Number(o.high));
      } catch (e) {
        if (!LEADER_MOVING.has((e as { type?: string }).type ?? '') || Date.now() > deadline) throw e;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }

  /** Committed offsets of a consumer group, per partition of each topic (0 where none). */
  async committedOffsets(group: string, topics: readonly string[]): Promise<Map<string, number>> {
    const result = new Map<string, number>();
    const entries = await this.admin.fetchOffsets({
      groupId: this.names.group(group),
      topics: topics.map((t) => this.names.topic(t)),
    });
    for (const entry of entries) {
      for (const p of entry.partitions)
        result.set(
          partitionKey(this.names.engineTopic(entry.topic), p.partition),
          Math.max(0, Number(p.offset)),
        );
    }
    return result;
  }

  async openTask(spec: TaskSpec): Promise<LogTask> {
    let partitions = 1;
    for (const topic of spec.topics) partitions = Math.max(partitions, await this.partitionsOf(topic));
    const global = spec.scope === 'global' || spec.topics.length === 0;
    const state = new ChangelogState(this, spec.group, spec.stores, global ? 1 : partitions);
    await state.ensureTopics();
    const task = await (this.url.client === 'kafkajs'
      ? KafkajsTask.open(this, spec, state)
      : RdkafkaTask.open(this, spec, state)
    ).catch(rethrowExplained);
    this.tasks.add(task);
    return task;
  }

  async readStore(group: string, store: string): Promise<StoredValue[]> {
    const topic = `${group}-${store}-changelog`;
    const existing = new Set(await this.admin.listTopics());
    if (!existing.has(this.names.topic(topic))) return [];
    const latest = new Map<string, StoredValue | null>();
    const partitions = await this.partitionsOf(topic);
    for (let p = 0; p < partitions; p++) {
      await this.readToEnd(topic, p, (records) => {
        for (const r of records) {
          if (r.key === null) continue;
          const value = JSON.parse(r.value) as string | null;
          // A store with one changelog partition may be global or one input partition's: the record says.
          const scope = partitions === 1 ? GLOBAL : p;
          latest.set(`${p}\u0000${r.key}`, value === null ? null : { partition: scope, key: r.key, value });
        }
      });
    }
    return [...latest.values()].filter((v): v is StoredValue => v !== null);
  }

  /** Each of this app's consumer groups: members, their partitions, and lag per partition. */
  async groups(): Promise<GroupStatus[]> {
    const listed = (await this.admin.listGroups()).groups
      .map((g) => g.groupId)
      .filter((g) => this.names.owns(g))
      .sort();
    if (!listed.length) return [];
    const described = await this.admin.describeGroups(listed);
    const out: GroupStatus[] = [];
    for (const g of described.groups) {
      const members: GroupMember[] = g.members.map((m) => {
        const partitions: Record<string, number[]> = {};
        const decoded = m.memberAssignment?.length
          ? AssignerProtocol.MemberAssignment.decode(m.memberAssignment)
          : null;
        for (const [topic, ps] of Object.entries(decoded?.assignment ?? {}))
          partitions[this.names.engineTopic(topic)] = [...ps].sort((a, b) => a - b);
        return { member: m.memberId, client: m.clientId, host: m.clientHost, partitions };
      });
      const offsets = await this.admin.fetchOffsets({ groupId: g.groupId });
      const lag: Record<string, number[]> = {};
      for (const entry of offsets) {
        const ends = await this.admin.fetchTopicOffsets(entry.topic);
        const topic = this.names.engineTopic(entry.topic);
        lag[topic] = entry.partitions
          .sort((a, b) => a.partition - b.partition)
          .map((p) => {
            const end = Number(ends.find((e) => e.partition === p.partition)?.high ?? 0);
            return Math.max(0, end - Math.max(0, Number(p.offset)));
          });
      }
      out.push({ group: g.groupId.slice(this.names.prefix.length), state: g.state, members, lag });
    }
    return out;
  }

  /** This app's topics and consumer groups on the cluster (Kafka names). */
  async appResources(): Promise<{ topics: string[]; groups: string[] }> {
    const topics = (await this.admin.listTopics()).filter((t) => this.names.owns(t)).sort();
    const groups = (await this.admin.listGroups()).groups
      .map((g) => g.groupId)
      .filter((g) => this.names.owns(g))
      .sort();
    return { topics, groups };
  }

  /** Deletes this app's topics and consumer groups (`bioalchemy reset`); its members must be stopped. */
  async deleteApp(): Promise<{ topics: string[]; groups: string[] }> {
    const found = await this.appResources();
    if (found.groups.length) await this.deleteGroupsOnceEmpty(found.groups);
    if (found.topics.length) await this.admin.deleteTopics({ topics: found.topics, timeout: 30_000 });
    this.partitionCounts.clear();
    return found;
  }

  /**
   * A worker stopped a moment ago may still be a member: with static membership it sends no
   * LeaveGroup, and the broker drops it only when its session times out. So a group the broker
   * calls non-empty is asked again until a few session timeouts have passed; after that a member
   * is a running worker, and the error says so.
   */
  private async deleteGroupsOnceEmpty(groups: string[]): Promise<void> {
    const deadline = Date.now() + 3 * SESSION_TIMEOUT_MS;
    let left = groups;
    for (;;) {
      try {
        await this.admin.deleteGroups(left);
        return;
      } catch (e) {
        const failed = (e as { groups?: { groupId: string; error?: { type?: string } }[] }).groups ?? [];
        const nonEmpty = failed.filter((g) => g.error?.type === 'NON_EMPTY_GROUP').map((g) => g.groupId);
        if (!nonEmpty.length || nonEmpty.length < failed.length) throw e;
        if (Date.now() > deadline)
          throw new Error(
            `consumer group(s) ${nonEmpty.join(', ')} still have members after ${(3 * SESSION_TIMEOUT_MS) / 1000} s: stop the app's workers first`,
          );
        left = nonEmpty;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  /** Waits (up to 5 s, then warns) until read_committed readers reach what a closing task wrote. */
  async untilReadable(written: WrittenPartitions): Promise<void> {
    if (!written.size) return;
    this.readable ??= ReadableWait.open(this.endpoint, this.names);
    if (!(await (await this.readable).until(written, 5_000)))
      this.log.warn(
        { topics: [...written.keys()] },
        'a transaction is still open on a partition written: not readable yet',
      );
  }

  forget(task: LogTask): void {
    this.tasks.delete(task);
  }

  async close(): Promise<void> {
    for (const t of [...this.tasks]) await t.close();
    await (await this.reader)?.close();
    await (await this.readable?.catch(() => undefined))?.close();
    await this.producer.disconnect();
    await this.admin.disconnect();
  }
}

function byteLength(v: Buffer | string | null | undefined): number {
  return v == null ? 0 : typeof v === 'string' ? Buffer.byteLength(v) : v.length;
}

/** Rethrows an error, as the access fault it stands for where it is one (see access-errors.ts). */
function rethrowExplained(e: unknown): never {
  throw explainAccess(e);
}
