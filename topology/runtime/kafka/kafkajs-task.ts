import type kafkajs from 'kafkajs';
import { type LogRecord, type Offset, partitionKey, type StateChange } from '../../records.js';
import type { LogTask, LogTransaction, TaskSpec } from '../types.js';
import type { KafkaConnection } from './connection.js';
import type { ChangelogState } from './state.js';
import { kafkaTransaction, rethrowFenced } from './transaction.js';
import { headerText, VALIDATED_AS_HEADER } from './wire.js';

/** A fetched batch of one partition, held (so kafkajs fetches no further) until the queue runs low. */
interface HeldBatch {
  readonly release: () => void;
}

/**
 * kafkajs pushes batches to a callback; the engine pulls. Each batch's records are queued, its
 * offsets resolved (kafkajs never commits: autoCommit is off) and its callback held until the
 * queue runs low, so kafkajs fetches the next batch while this one is processed and committed,
 * and never runs far ahead. A rewind seeks back to the committed offsets and empties the queue.
 * kafkajs's transactions carry no consumer-group metadata (KIP-447), so the transactional id is
 * the group's: one member per group, restarts fence zombies.
 */
export class KafkajsTask implements LogTask {
  private readonly queue: LogRecord[] = [];
  private readonly held = new Set<HeldBatch>();
  /** Records the last poll asked for: held batches are let go once fewer than this are queued. */
  private wanted = 1;
  private readonly committed = new Map<string, number>();
  /**
   * Next offset to queue per partition. A batch fetched before a seek can still arrive after it,
   * and the refetch after the seek repeats its records: anything below this is such a repeat.
   */
  private readonly position = new Map<string, { topic: string; partition: number; next: number }>();
  private wake: (() => void) | null = null;
  /** A commit or abort failed: its outcome is unknown and the producer may be stuck. */
  private unsure = false;
  private failure: Error | null = null;

  private constructor(
    private readonly runtime: KafkaConnection,
    private readonly spec: TaskSpec,
    private readonly state: ChangelogState,
    private readonly consumer: kafkajs.Consumer,
    private producer: kafkajs.Producer,
  ) {}

  private static async transactionalProducer(
    runtime: KafkaConnection,
    spec: TaskSpec,
  ): Promise<kafkajs.Producer> {
    const producer = runtime.kafka.producer({
      transactionalId: `bioalchemy-${spec.group}`,
      idempotent: true,
      maxInFlightRequests: 1,
      transactionTimeout: 10_000,
      // Right after a commit the coordinator answers CONCURRENT_TRANSACTIONS until its markers are
      // written (milliseconds): kafkajs's default 300 ms first retry would cost that on every step.
      retry: { initialRetryTime: 10, maxRetryTime: 1_000, retries: 30 },
    });
    await producer.connect();
    return producer;
  }

  static async open(runtime: KafkaConnection, spec: TaskSpec, state: ChangelogState): Promise<KafkajsTask> {
    const producer = await KafkajsTask.transactionalProducer(runtime, spec);
    await state.restore();
    let partitions = 0;
    for (const topic of spec.topics) partitions += await runtime.partitionsOf(topic);
    const consumer = runtime.kafka.consumer({
      groupId: spec.group,
      readUncommitted: false,
      maxWaitTimeInMs: 100,
      // A killed member holds its partitions until its session expires, and kafkajs has no static
      // membership: keep the session at the broker's minimum so a restart resumes within seconds.
      sessionTimeout: 6_000,
      rebalanceTimeout: 10_000,
      heartbeatInterval: 1_000,
    });
    const task = new KafkajsTask(runtime, spec, state, consumer, producer);
    for (const [k, v] of await runtime.committedOffsets(spec.group, spec.topics)) task.committed.set(k, v);
    await consumer.connect();
    await consumer.subscribe({ topics: [...spec.topics], fromBeginning: true });
    consumer.on(consumer.events.CRASH, (e) => {
      // kafkajs restarts itself after retriable crashes (a broker restart); only the rest are fatal.
      if (e.payload.restart) return;
      task.failure = e.payload.error;
      task.wake?.();
    });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: Math.max(1, partitions),
      eachBatch: (payload) => task.onBatch(payload),
    });
    return task;
  }

  private async onBatch({
    batch,
    resolveOffset,
    heartbeat,
    isRunning,
    isStale,
  }: kafkajs.EachBatchPayload): Promise<void> {
    const { topic, partition } = batch;
    const values = await this.runtime.wire.decode(batch.messages.map((m) => ({ topic, value: m.value })));
    const decoded: LogRecord[] = batch.messages.map((m, i) => {
      const validatedAs = headerText(m.headers?.[VALIDATED_AS_HEADER]);
      return {
        topic,
        partition,
        offset: Number(m.offset),
        key: m.key?.toString() ?? null,
        value: values[i]!,
        timestamp: Number(m.timestamp),
        validatedAs,
      };
    });
    // A rewind while this batch was decoded: the seek refetches it.
    if (isStale()) return;
    resolveOffset(batch.lastOffset());
    // Read only now: a rewind during the decoding may have moved the committed offset.
    const k = partitionKey(topic, partition);
    const from = this.position.get(k)?.next ?? this.committed.get(k) ?? 0;
    const records = decoded.filter((r) => r.offset >= from);
    if (records.length === 0) return;
    this.position.set(k, { topic, partition, next: records[records.length - 1]!.offset + 1 });
    for (const r of records) this.queue.push(r);
    this.wake?.();
    if (this.queue.length < this.wanted) return;
    await new Promise<void>((release) => {
      const beat = setInterval(() => {
        if (!isRunning() || isStale()) entry.release();
        else heartbeat().catch(() => {});
      }, 1_000);
      const entry: HeldBatch = {
        release: () => {
          clearInterval(beat);
          this.held.delete(entry);
          release();
        },
      };
      this.held.add(entry);
    });
  }

  async poll(max: number, waitMs: number): Promise<LogRecord[]> {
    this.wanted = max;
    const deadline = Date.now() + waitMs;
    while (this.queue.length === 0 && Date.now() < deadline) {
      if (this.failure) throw this.failure;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, deadline - Date.now());
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
    const out = this.queue.splice(0, max);
    if (this.queue.length < max) for (const b of [...this.held]) b.release();
    return out;
  }

  readState(store: string, key: string): string | undefined {
    return this.state.get(store, key);
  }

  async begin(): Promise<LogTransaction> {
    const tx = await this.producer.transaction().catch(rethrowFenced);
    // Sends are not awaited one by one: the step goes on while kafkajs writes; commit waits for all.
    const sending: Promise<unknown>[] = [];
    return kafkaTransaction(this.state, {
      send: async (records) => {
        for (const chunk of await this.runtime.sendChunks(records)) {
          const sent = tx.sendBatch({ topicMessages: chunk });
          sent.catch(() => {});
          sending.push(sent);
        }
      },
      commit: async (offsets) => {
        await Promise.all(sending);
        if (offsets.length)
          await tx.sendOffsets({ consumerGroupId: this.spec.group, topics: groupByTopic(offsets) });
        await tx.commit();
      },
      committed: (offsets) => {
        for (const { topic, partition, offset } of offsets)
          this.committed.set(partitionKey(topic, partition), offset);
      },
      abort: async () => {
        this.unsure = true;
        if (tx.isActive()) await tx.abort().catch(() => {});
      },
    });
  }

  async flushState(changes: readonly StateChange[]): Promise<void> {
    this.state.apply(changes);
  }

  async rewind(): Promise<void> {
    if (this.unsure) {
      // kafkajs leaves a producer whose commit or abort failed stuck in COMMITTING/ABORTING: a new
      // one's initialisation finishes or aborts that transaction. Then take offsets and state from
      // the log, since the failed commit may have landed after all.
      await this.producer.disconnect().catch(() => {});
      this.producer = await KafkajsTask.transactionalProducer(this.runtime, this.spec);
      for (const [k, v] of await this.runtime.committedOffsets(this.spec.group, this.spec.topics))
        this.committed.set(k, v);
      await this.state.restore();
      this.unsure = false;
    }
    this.queue.length = 0;
    for (const { topic, partition } of this.position.values()) {
      const offset = this.committed.get(partitionKey(topic, partition)) ?? 0;
      this.consumer.seek({ topic, partition, offset: String(offset) });
    }
    this.position.clear();
    for (const b of [...this.held]) b.release();
  }

  async close(): Promise<void> {
    this.runtime.forget(this);
    for (const b of [...this.held]) b.release();
    await this.consumer.disconnect();
    await this.producer.disconnect();
  }
}

function groupByTopic(offsets: readonly Offset[]) {
  const topics = new Map<string, { partition: number; offset: string }[]>();
  for (const o of offsets)
    topics.set(o.topic, [
      ...(topics.get(o.topic) ?? []),
      { partition: o.partition, offset: String(o.offset) },
    ]);
  return [...topics].map(([topic, partitions]) => ({ topic, partitions }));
}
