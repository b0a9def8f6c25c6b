import type kafkajs from 'kafkajs';
import { GLOBAL, type LogRecord, type Offset, partitionKey, type StateChange } from '../../records.js';
import { FencedError, type LogTask, type LogTransaction, type TaskSpec } from '../types.js';
import { engineAssigner } from './assigner.js';
import { SESSION_TIMEOUT_MS } from './config.js';
import type { KafkaConnection } from './connection.js';
import { noteWritten } from './readable.js';
import { VALIDATED_AS_HEADER } from './stamp-seal.js';
import type { ChangelogState } from './state.js';
import { rethrowFenced } from './transaction.js';
import { headerText, recordValue } from './wire.js';

/** A fetched batch of one partition, held (so kafkajs fetches no further) until the queue runs low. */
interface HeldBatch {
  readonly release: () => void;
}

/** One input partition's (or the global store's) share of a transaction. */
interface ScopeTransaction {
  readonly tx: kafkajs.Transaction;
  /**
   * The sends so far, one after another: kafkajs numbers an idempotent batch when it builds the
   * request, so two sends in flight to one partition can be refused as out of order and the
   * retried one lands after later records (a counter's old value after its new one).
   */
  sending: Promise<unknown>;
}

/**
 * kafkajs pushes batches to a callback; the engine pulls. Each batch's records are queued, its
 * offsets resolved (kafkajs never commits: autoCommit is off) and its callback held until the
 * queue runs low, so kafkajs fetches the next batch while this one is processed and committed,
 * and never runs far ahead. A rewind seeks back to the committed offsets and empties the queue.
 *
 * Many workers of one processor: kafkajs's transactions carry no consumer-group metadata
 * (KIP-447), so this is Kafka Streams' older exactly-once model: one transactional producer per
 * input partition number (`<app>.<group>.<n>`; one for a global processor), made by the member
 * the partition is assigned to. Its initialisation fences the previous owner's producer and
 * aborts its open transaction, so a zombie cannot commit. A transaction of the engine is then one
 * Kafka transaction per partition it touched (outputs, changelog records and offsets of that
 * partition together), committed side by side. The group's assigner keeps partition n of every
 * input on one member. On assignment, before any record of a new partition is handed out, its
 * producer is made, its committed offsets read and its state restored; revoked partitions' state
 * and producers are dropped.
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
  /** A commit or abort failed: its outcome is unknown and the producers may be stuck. */
  private unsure = false;
  private failure: Error | null = null;
  /** Transactional producer per owned scope (input partition number, or GLOBAL). */
  private readonly producers = new Map<number, kafkajs.Producer>();
  /** Per owned scope: resolves once its producer, offsets and state are ready. */
  private readonly ready = new Map<number, Promise<void>>();
  /** Partition keys (engine names) of the current assignment. */
  private assignedKeys = new Set<string>();
  /** Bumped by each rebalance; a transaction begun under another revision must not commit. */
  private revision = 0;
  /** A GROUP_JOIN came, and no REBALANCING since: see inGroup(). */
  private joined = false;
  /** Records handed out before the last rebalance may still be in the task: it must rewind first. */
  private stale = false;
  private readonly global: boolean;
  private closed = false;
  /** Partitions this task wrote to: its close waits until they are readable. */
  private readonly written = new Map<string, Set<number>>();

  private constructor(
    private readonly runtime: KafkaConnection,
    private readonly spec: TaskSpec,
    private readonly state: ChangelogState,
    private readonly consumer: kafkajs.Consumer,
  ) {
    this.global = spec.scope === 'global' || spec.topics.length === 0;
  }

  private async transactionalProducer(scope: number): Promise<kafkajs.Producer> {
    const producer = this.runtime.kafka.producer({
      transactionalId: this.runtime.names.transactionalId(
        this.spec.group,
        scope === GLOBAL ? 'global' : scope,
      ),
      idempotent: true,
      maxInFlightRequests: 1,
      transactionTimeout: 10_000,
      // Right after a commit the coordinator answers CONCURRENT_TRANSACTIONS until its markers are
      // written (milliseconds): kafkajs's default 300 ms first retry would cost that on every step.
      retry: { initialRetryTime: 10, maxRetryTime: 1_000, retries: 30 },
    });
    await producer.connect();
    // kafkajs initialises the transactional id only when a first transaction begins: do it now,
    // so that the previous holder is fenced and its open transaction ended before this member
    // reads offsets and state.
    const tx = await producer.transaction();
    await tx.abort();
    return producer;
  }

  static async open(runtime: KafkaConnection, spec: TaskSpec, state: ChangelogState): Promise<KafkajsTask> {
    const global = spec.scope === 'global' || spec.topics.length === 0;
    const consumer = runtime.kafka.consumer({
      groupId: runtime.names.group(spec.group),
      readUncommitted: false,
      maxWaitTimeInMs: 100,
      partitionAssigners: [engineAssigner(global)],
      // A killed member holds its partitions until its session expires, and kafkajs has no static
      // membership: keep the session at the broker's minimum so a restart resumes within seconds.
      sessionTimeout: SESSION_TIMEOUT_MS,
      rebalanceTimeout: 10_000,
      heartbeatInterval: 1_000,
    });
    const task = new KafkajsTask(runtime, spec, state, consumer);
    if (!spec.topics.length) {
      // A task reading nothing (ingest) owns its global store alone.
      task.producers.set(GLOBAL, await task.transactionalProducer(GLOBAL));
      await state.restore([GLOBAL]);
      return task;
    }
    let partitions = 0;
    for (const topic of spec.topics) partitions += await runtime.partitionsOf(topic);
    await consumer.connect();
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      task.joined = true;
      task.onJoin(e.payload.memberAssignment);
    });
    consumer.on(consumer.events.REBALANCING, () => {
      task.joined = false;
    });
    await consumer.subscribe({ topics: spec.topics.map((t) => runtime.names.topic(t)), fromBeginning: true });
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

  /**
   * A new assignment (kafkajs emits it before fetching): revoked scopes lose their state and
   * producer; new ones get a producer (fencing the previous owner), offsets and state, and their
   * batches wait for that.
   */
  private onJoin(assignment: kafkajs.IMemberAssignment): void {
    const { names } = this.runtime;
    const keys = new Set<string>();
    const numbers = new Set<number>();
    for (const [topic, partitions] of Object.entries(assignment)) {
      for (const p of partitions) {
        keys.add(partitionKey(names.engineTopic(topic), p));
        numbers.add(p);
      }
    }
    if (
      [...this.position.values()].some(
        (p) => p.next > (this.committed.get(partitionKey(p.topic, p.partition)) ?? 0),
      )
    )
      this.stale = true;
    this.revision++;
    this.assignedKeys = keys;
    for (const k of [...this.position.keys()]) if (!keys.has(k)) this.position.delete(k);
    const scopes = this.global ? (numbers.size ? [GLOBAL] : []) : [...numbers].sort((a, b) => a - b);
    this.runtime.log.info({ group: this.spec.group, partitions: scopes }, 'assignment');
    const revoked = [...this.ready.keys()].filter((s) => !scopes.includes(s));
    for (const s of revoked) {
      this.ready.delete(s);
      this.state.drop([s]);
      const producer = this.producers.get(s);
      this.producers.delete(s);
      producer?.disconnect().catch(() => {});
    }
    const added = scopes.filter((s) => !this.ready.has(s));
    for (const s of added) {
      const ready = this.prepare(s, keys).catch((err) => {
        this.failure = err as Error;
        this.wake?.();
        throw err;
      });
      ready.catch(() => {});
      this.ready.set(s, ready);
    }
    if (revoked.length || added.length)
      this.runtime.log.info({ group: this.spec.group, revoked, added }, 'partitions reassigned');
  }

  /** A new scope: its producer (fencing the previous owner), then its offsets and state. */
  private async prepare(scope: number, keys: ReadonlySet<string>): Promise<void> {
    const producer = await this.transactionalProducer(scope);
    // Revoked or closed meanwhile: the producer is not this member's to keep.
    if (this.closed || !this.ready.has(scope)) {
      await producer.disconnect().catch(() => {});
      return;
    }
    this.producers.set(scope, producer);
    const committed = await this.runtime.committedOffsets(this.spec.group, this.spec.topics);
    for (const k of keys) {
      const [topic, p] = k.split('\u0000') as [string, string];
      if (this.global || Number(p) === scope)
        this.committed.set(k, committed.get(partitionKey(topic, Number(p))) ?? 0);
    }
    this.runtime.log.debug(
      { scope, committed: [...this.committed].map(([k, v]) => `${k.split('\u0000')[1]}:${v}`) },
      'offsets read',
    );
    const restored = await this.state.restore([scope]);
    this.runtime.log.info({ group: this.spec.group, ...restored }, 'state restored');
  }

  private async onBatch({
    batch,
    resolveOffset,
    heartbeat,
    isRunning,
    isStale,
  }: kafkajs.EachBatchPayload): Promise<void> {
    const { partition } = batch;
    const topic = this.runtime.names.engineTopic(batch.topic);
    const ready = this.ready.get(this.global ? GLOBAL : partition);
    if (!ready) return;
    await this.holding(ready, heartbeat, isRunning, isStale);
    const values = await this.runtime.wire.decode(
      batch.messages.map((m) => ({ topic: batch.topic, value: m.value })),
    );
    const decoded: LogRecord[] = batch.messages.map((m, i) => {
      const validatedAs = this.runtime.seal.verified(headerText(m.headers?.[VALIDATED_AS_HEADER]), m.value);
      return {
        topic,
        partition,
        offset: Number(m.offset),
        key: m.key?.toString() ?? null,
        ...recordValue(values[i]!),
        timestamp: Number(m.timestamp),
        validatedAs,
      };
    });
    // A rewind while this batch was decoded: the seek refetches it.
    if (isStale()) return;
    resolveOffset(batch.lastOffset());
    // Read only now: a rewind during the decoding may have moved the committed offset.
    const k = partitionKey(topic, partition);
    if (!this.assignedKeys.has(k)) return;
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

  /** Waits for a promise while keeping the member's session alive. */
  private async holding(
    wait: Promise<void>,
    heartbeat: () => Promise<void>,
    isRunning: () => boolean,
    isStale: () => boolean,
  ): Promise<void> {
    const beat = setInterval(() => {
      if (isRunning() && !isStale()) heartbeat().catch(() => {});
    }, 1_000);
    try {
      await wait;
    } finally {
      clearInterval(beat);
    }
  }

  /** Joined: kafkajs emits GROUP_JOIN with the assignment, REBALANCING when the group moves again. */
  inGroup(): boolean {
    return this.joined;
  }

  owned(): readonly number[] {
    return this.global ? [] : this.state.held();
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
    if (this.failure) throw this.failure;
    const out = this.queue.splice(0, max);
    if (this.queue.length < max) for (const b of [...this.held]) b.release();
    return out;
  }

  readState(store: string, key: string, partition: number): string | undefined {
    return this.state.get(store, key, partition);
  }

  async begin(): Promise<LogTransaction> {
    if (this.stale) throw new FencedError('the group rebalanced: read again from the committed offsets');
    const revision = this.revision;
    const scopes = new Map<number, Promise<ScopeTransaction>>();
    const open = (scope: number): Promise<ScopeTransaction> => {
      let t = scopes.get(scope);
      if (!t) {
        const producer = this.producers.get(scope);
        t = producer
          ? producer.transaction().then((tx) => ({ tx, sending: Promise.resolve() }), rethrowFenced)
          : Promise.reject(new FencedError(`partition ${scope} is no longer this member's`));
        t.catch(() => {});
        scopes.set(scope, t);
      }
      return t;
    };
    const scopeOf = (from: number | undefined): number => {
      if (this.global) return GLOBAL;
      if (from === undefined || from === GLOBAL)
        throw new Error(`processor "${this.spec.group}": an output without its input partition`);
      return from;
    };
    const send = async (records: readonly { topic: string; from?: number }[] & readonly unknown[]) => {
      const byScope = new Map<number, (typeof records)[number][]>();
      for (const r of records) {
        const s = scopeOf(r.from);
        const some = byScope.get(s);
        if (some) some.push(r);
        else byScope.set(s, [r]);
      }
      for (const [s, some] of byScope) {
        const t = await open(s);
        for (const chunk of await this.runtime.sendChunks(some as never)) {
          for (const { topic, messages } of chunk)
            for (const m of messages) noteWritten(this.written, topic, m.partition!);
          t.sending = t.sending.then(() => t.tx.sendBatch({ topicMessages: chunk }));
          t.sending.catch(() => {});
        }
      }
    };
    let offsets: Offset[] = [];
    const abortAll = async () => {
      for (const t of scopes.values()) {
        const { tx } = await t.catch(() => ({ tx: null }));
        if (tx?.isActive()) await tx.abort().catch(() => {});
      }
    };
    return {
      writeChangelogs: (changes) => send(this.state.changelogRecords(changes)).catch(rethrowFenced),
      produce: (records) => send(records).catch(rethrowFenced),
      commitOffsets: async (o) => {
        offsets = [...o.values()];
      },
      commit: async () => {
        const moved = offsets.find((o) => !this.assignedKeys.has(partitionKey(o.topic, o.partition)));
        if (this.revision !== revision || moved) {
          await abortAll();
          this.unsure = true;
          throw new FencedError('the group rebalanced during the transaction: aborted');
        }
        const offsetsByScope = new Map<number, Offset[]>();
        for (const o of offsets) {
          const s = this.global ? GLOBAL : o.partition;
          offsetsByScope.set(s, [...(offsetsByScope.get(s) ?? []), o]);
          open(s);
        }
        const results = await Promise.allSettled(
          [...scopes].map(async ([s, t]) => {
            const { tx, sending } = await t;
            await sending;
            const mine = offsetsByScope.get(s) ?? [];
            if (mine.length)
              await tx.sendOffsets({
                consumerGroupId: this.runtime.names.group(this.spec.group),
                topics: groupByTopic(mine, (t) => this.runtime.names.topic(t)),
              });
            await tx.commit();
            this.runtime.log.debug(
              { scope: s, offsets: mine.map((o) => `${o.partition}:${o.offset}`) },
              'committed',
            );
            for (const { topic, partition, offset } of mine)
              this.committed.set(partitionKey(topic, partition), offset);
          }),
        );
        const failed = results.find((r) => r.status === 'rejected');
        if (failed) {
          // Some partitions may have committed: read offsets and state back from the log.
          this.unsure = true;
          await abortAll();
          rethrowFenced(failed.reason);
        }
      },
      abort: async () => {
        this.unsure = true;
        await abortAll();
      },
    };
  }

  async flushState(changes: readonly StateChange[]): Promise<void> {
    this.state.apply(changes);
  }

  async rewind(): Promise<void> {
    this.stale = false;
    if (this.unsure) {
      // kafkajs leaves a producer whose commit or abort failed stuck in COMMITTING/ABORTING: a new
      // one's initialisation finishes or aborts that transaction. Then take offsets and state from
      // the log, since the failed commit may have landed after all.
      const scopes = [...this.producers.keys()];
      for (const s of scopes) {
        await this.producers
          .get(s)
          ?.disconnect()
          .catch(() => {});
        this.producers.set(s, await this.transactionalProducer(s));
      }
      for (const [k, v] of await this.runtime.committedOffsets(this.spec.group, this.spec.topics))
        if (this.assignedKeys.has(k)) this.committed.set(k, v);
      this.runtime.log.debug(
        { committed: [...this.committed].map(([k, v]) => `${k.split('\u0000')[1]}:${v}`) },
        'rewound, offsets read',
      );
      await this.state.restore(this.state.held());
      this.unsure = false;
    }
    this.queue.length = 0;
    for (const { topic, partition } of this.position.values()) {
      const offset = this.committed.get(partitionKey(topic, partition)) ?? 0;
      this.consumer.seek({ topic: this.runtime.names.topic(topic), partition, offset: String(offset) });
    }
    this.position.clear();
    for (const b of [...this.held]) b.release();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.runtime.forget(this);
    for (const b of [...this.held]) b.release();
    await this.consumer.disconnect();
    for (const p of this.producers.values()) await p.disconnect().catch(() => {});
    await this.runtime.untilReadable(this.written);
  }
}

function groupByTopic(offsets: readonly Offset[], kafkaTopic: (t: string) => string) {
  const topics = new Map<string, { partition: number; offset: string }[]>();
  for (const o of offsets)
    topics.set(kafkaTopic(o.topic), [
      ...(topics.get(kafkaTopic(o.topic)) ?? []),
      { partition: o.partition, offset: String(o.offset) },
    ]);
  return [...topics].map(([topic, partitions]) => ({ topic, partitions }));
}
