import rdkafka from 'node-rdkafka';
import { GLOBAL, type LogRecord, partitionKey, type StateChange } from '../../records.js';
import { FencedError, type LogTask, type LogTransaction, type TaskSpec } from '../types.js';
import { SESSION_TIMEOUT_MS } from './config.js';
import type { KafkaConnection } from './connection.js';
import { noteWritten } from './readable.js';
import { VALIDATED_AS_HEADER } from './stamp-seal.js';
import type { ChangelogState } from './state.js';
import { kafkaTransaction, rethrowFenced } from './transaction.js';
import { rdkafkaRecord } from './wire.js';

const call = <T = void>(
  fn: (cb: (err: rdkafka.LibrdKafkaError | null | undefined, value?: T) => void) => void,
): Promise<T> =>
  new Promise((resolve, reject) => fn((err, value) => (err ? reject(err) : resolve(value as T))));

/**
 * The throughput path: librdkafka's pull consumer (`consume(n)`) and its transactional producer.
 *
 * Many workers of one processor share its consumer group (exactly_once_v2, KIP-447): each worker
 * has one transactional producer, its id `<app>.<group>.<worker>`, and commits input offsets with
 * the consumer's group metadata (sendOffsetsToTransaction), so the broker refuses a commit from a
 * member of an older generation: a zombie, paused past its session and since replaced, cannot
 * commit. Static membership (`group.instance.id`, per worker) lets a restarted worker take its
 * predecessor's partitions at once, and the same transactional id aborts what it left open.
 *
 * Rebalances (range assignment, so partition n of every input lands on one member): the callback
 * takes the new assignment at once; before it hands out another record, poll() drops the state of
 * revoked partitions and restores that of new ones from their changelog partitions (after a stable
 * offset fetch, which waits out the previous owner's open transaction). A transaction begun before
 * a rebalance never commits: it is aborted and its records read again from the committed offsets.
 */
export class RdkafkaTask implements LogTask {
  private readonly committed = new Map<string, number>();
  /** Next offset expected per partition: librdkafka can still hand out records fetched before a seek. */
  private readonly position = new Map<string, number>();
  private fatal: Error | null = null;
  /** A commit failed: its outcome is unknown until offsets and state are read back from the log. */
  private unsure = false;
  /**
   * The next batch, asked for as soon as the last one came back, so that librdkafka's worker
   * gathers it while the engine processes this one; and what a batch brought beyond `max`.
   */
  private ahead: { readonly revision: number; readonly batch: Promise<rdkafka.Message[]> } | null = null;
  private leftover: rdkafka.Message[] = [];
  /** Records were handed out since positions were last reset to the committed offsets. */
  private handedOut = false;
  /** An assignment not yet taken: see onRebalance. */
  private pending: rdkafka.Assignment[] | null = null;
  /** The partitions assigned by the last rebalance (Kafka topic names). */
  private assigned: rdkafka.Assignment[] = [];
  /** Partition keys (engine names) of `assigned`. */
  private assignedKeys = new Set<string>();
  /** Bumped by each rebalance; a transaction begun under another revision must not commit. */
  private revision = 0;
  /** A rebalance assigned this member (assign() called after its state was restored): see inGroup(). */
  private joined = false;
  /** The revision state was last reconciled at. */
  private reconciled = 0;
  /** A rebalance happened that poll() has not reconciled state and offsets with yet. */
  private rebalanced = false;
  /** Records polled before the last rebalance may still be in the task: it must rewind first. */
  private stale = false;
  private readonly global: boolean;
  /** Partitions this task wrote to: its close waits until they are readable. */
  private readonly written = new Map<string, Set<number>>();

  private constructor(
    private readonly runtime: KafkaConnection,
    private readonly group: string,
    private readonly topics: readonly string[],
    private readonly state: ChangelogState,
    private readonly producer: rdkafka.Producer,
    global: boolean,
  ) {
    this.global = global;
  }

  private consumer!: rdkafka.KafkaConsumer;

  static async open(runtime: KafkaConnection, spec: TaskSpec, state: ChangelogState): Promise<RdkafkaTask> {
    const endpoint = runtime.endpoint.rdkafka();
    const { names } = runtime;
    const global = spec.scope === 'global' || spec.topics.length === 0;
    // A global processor has one active member: its workers share one transactional id and one
    // static member id, so the newest fences the one before it.
    const member = global ? 'global' : runtime.worker;
    const producer = new rdkafka.Producer({
      ...endpoint,
      'transactional.id': names.transactionalId(spec.group, member),
      'transaction.timeout.ms': 10_000,
      'enable.idempotence': true,
      'linger.ms': 5,
    });
    await call((cb) => producer.connect({}, (err) => cb(err)));
    await call((cb) => producer.initTransactions(30_000, cb));
    const task = new RdkafkaTask(runtime, spec.group, spec.topics, state, producer, global);
    const consumer = new rdkafka.KafkaConsumer(
      {
        'group.id': names.group(spec.group),
        'client.id': `${names.group(spec.group)}.${runtime.worker}`,
        'group.instance.id': `${names.group(spec.group)}.${member}`,
        'session.timeout.ms': SESSION_TIMEOUT_MS,
        'partition.assignment.strategy': 'range',
        ...endpoint,
        'enable.auto.commit': false,
        'enable.auto.offset.store': false,
        'isolation.level': 'read_committed',
        'fetch.wait.max.ms': 50,
        rebalance_cb: (err: rdkafka.LibrdKafkaError, assignment: rdkafka.Assignment[]) =>
          task.onRebalance(err, assignment),
      },
      { 'auto.offset.reset': 'earliest' },
    );
    task.consumer = consumer;
    await call((cb) => consumer.connect({}, (err) => cb(err)));
    // librdkafka reports broker outages as error events and recovers by itself; only fatal ones end the task.
    for (const client of [producer, consumer] as rdkafka.Client<string>[]) {
      client.on('event.error', (err: rdkafka.LibrdKafkaError) => {
        if (err.isFatal) task.fatal = new Error(`librdkafka: ${err.message}`);
      });
    }
    if (spec.topics.length) consumer.subscribe(spec.topics.map((t) => names.topic(t)));
    // A task reading nothing (ingest) owns its global store alone, from the start: no rebalance
    // will restore it. The producer's initialisation above fenced the one before, so its end is stable.
    else await state.restore([GLOBAL]);
    return task;
  }

  /**
   * A revoke is taken at once; an assignment waits (librdkafka holds the group's rebalance until
   * assign() is called) until poll() has fetched its committed offsets and restored its state,
   * then starts each partition at its committed offset, so nothing fetched before is mistaken
   * for what comes after.
   */
  private onRebalance(err: rdkafka.LibrdKafkaError, assignment: rdkafka.Assignment[]): void {
    if (err.code === rdkafka.CODES.ERRORS.ERR__ASSIGN_PARTITIONS) this.pending = assignment;
    else {
      this.pending = null;
      // Thrown from here it would end the process; a consumer that is closing refuses it.
      try {
        this.consumer.unassign();
      } catch (e) {
        this.runtime.log.warn({ err: e }, 'revoke not taken');
      }
      this.assigned = [];
      this.assignedKeys = new Set();
      this.joined = false;
    }
    this.revision++;
    this.rebalanced = true;
  }

  /**
   * Brings state and offsets in line with a new assignment: drops revoked partitions' state,
   * fetches committed offsets (stable: after any open transaction on them ends), restores the
   * state of the new ones, and only then assigns, every partition from its committed offset.
   * What was fetched before is dropped; a task holding records polled before must rewind.
   */
  private async reconcile(): Promise<void> {
    const ahead = this.ahead;
    this.ahead = null;
    await ahead?.batch.catch(() => {});
    this.leftover = [];
    while (this.rebalanced) {
      this.rebalanced = false;
      // Records handed out and not committed: the task must drop them and read again.
      if ([...this.position].some(([k, next]) => next > (this.committed.get(k) ?? 0))) this.stale = true;
      this.handedOut = false;
      this.position.clear();
      const target = this.pending ?? this.assigned;
      const scopes = this.global
        ? target.length
          ? [GLOBAL]
          : []
        : [...new Set(target.map((a) => a.partition))].sort((a, b) => a - b);
      this.runtime.log.info({ group: this.group, partitions: scopes }, 'assignment');
      // One eager rebalance (revoke, then assign) leaves the partitions kept untouched by anyone
      // else; after more than one, a kept partition may have been another member's meanwhile.
      const missed = this.revision - this.reconciled > 2;
      this.reconciled = this.revision;
      const revoked = this.state.held().filter((s) => missed || !scopes.includes(s));
      this.state.drop(revoked);
      const added = scopes.filter((s) => !this.state.holds(s));
      if (target.length) await this.fetchCommitted(target);
      if (this.rebalanced) continue;
      if (added.length) {
        const restored = await this.state.restore(added);
        this.runtime.log.info(
          { group: this.group, ...restored, revoked },
          'partitions assigned, state restored',
        );
      } else if (revoked.length) this.runtime.log.info({ group: this.group, revoked }, 'partitions revoked');
      if (this.rebalanced || !this.pending) continue;
      const { names } = this.runtime;
      this.consumer.assign(
        this.pending.map((a) => ({
          topic: a.topic,
          partition: a.partition,
          offset: this.committed.get(partitionKey(names.engineTopic(a.topic), a.partition)) ?? 0,
        })),
      );
      this.assigned = this.pending;
      this.joined = true;
      this.assignedKeys = new Set(
        this.assigned.map((a) => partitionKey(names.engineTopic(a.topic), a.partition)),
      );
      this.pending = null;
    }
  }

  /** Committed offsets of the partitions, stable: librdkafka waits out pending transactional commits. */
  private async fetchCommitted(partitions: readonly rdkafka.Assignment[]): Promise<void> {
    const offsets = await call<rdkafka.TopicPartitionOffset[]>((cb) =>
      this.consumer.committed(
        partitions.map((p) => ({ topic: p.topic, partition: p.partition })),
        30_000,
        cb,
      ),
    );
    for (const o of offsets)
      this.committed.set(
        partitionKey(this.runtime.names.engineTopic(o.topic), o.partition),
        Math.max(0, o.offset ?? 0),
      );
  }

  inGroup(): boolean {
    return this.joined && !this.rebalanced;
  }

  owned(): readonly number[] {
    return this.global ? [] : this.state.held();
  }

  async poll(max: number, waitMs: number): Promise<LogRecord[]> {
    if (this.fatal) throw this.fatal;
    if (this.rebalanced) await this.reconcile();
    if (this.stale) {
      // Nothing more until the task has rewound (its next commit or begin tells it to).
      await new Promise((r) => setTimeout(r, Math.min(waitMs, 50)));
      return [];
    }
    this.consumer.setDefaultConsumeTimeout(Math.max(1, waitMs));
    const ahead = this.ahead ?? this.fetch(max);
    this.ahead = null;
    const gathered = await ahead.batch;
    // A rebalance came while this was fetched: reconcile drops it, and assigns from the committed offsets.
    if (this.rebalanced) {
      this.leftover = [];
      await this.reconcile();
      return [];
    }
    const fetched = this.leftover.length ? [...this.leftover, ...gathered] : gathered;
    this.leftover = fetched.splice(max);
    this.ahead = this.fetch(max);
    const messages: rdkafka.Message[] = [];
    const topics: string[] = [];
    // Messages come in runs of one partition: look its position up once a run.
    let run = null as {
      topic: string;
      partition: number;
      key: string;
      next: number;
      owned: boolean;
      engine: string;
    } | null;
    for (const m of fetched) {
      if (run?.partition !== m.partition || run.topic !== m.topic) {
        if (run?.owned) this.position.set(run.key, run.next);
        const engine = this.runtime.names.engineTopic(m.topic);
        const key = partitionKey(engine, m.partition);
        run = {
          topic: m.topic,
          partition: m.partition,
          key,
          engine,
          owned: this.assignedKeys.has(key),
          next: this.position.get(key) ?? this.committed.get(key) ?? 0,
        };
      }
      if (!run.owned || m.offset < run.next) continue;
      run.next = m.offset + 1;
      messages.push(m);
      topics.push(run.engine);
    }
    if (run?.owned) this.position.set(run.key, run.next);
    if (messages.length) this.handedOut = true;
    if (messages.length && this.runtime.log.isLevelEnabled('debug'))
      this.runtime.log.debug(
        { first: messages.slice(0, 3).map((m) => `${m.partition}@${m.offset}`), n: messages.length },
        'polled',
      );
    const values = await this.runtime.wire.decode(messages);
    return messages.map((m, i) => rdkafkaRecord(m, values[i]!, topics[i]!, this.runtime.seal));
  }

  /** Starts librdkafka's worker gathering up to max messages; the result is awaited later. */
  private fetch(max: number): { revision: number; batch: Promise<rdkafka.Message[]> } {
    const batch = call<rdkafka.Message[]>((cb) => this.consumer.consume(max, cb));
    batch.catch(() => {});
    return { revision: this.revision, batch };
  }

  /** Waits for the batch gathered ahead and forgets it: a rewind reads those records again. */
  private async dropAhead(): Promise<void> {
    const ahead = this.ahead;
    this.ahead = null;
    this.leftover = [];
    await ahead?.batch.catch(() => {});
  }

  readState(store: string, key: string, partition: number): string | undefined {
    return this.state.get(store, key, partition);
  }

  async begin(): Promise<LogTransaction> {
    // Records polled before the last rebalance may be in the task: it must rewind before it commits.
    if (this.stale) throw new FencedError('the group rebalanced: read again from the committed offsets');
    const revision = this.revision;
    await call((cb) => this.producer.beginTransaction(cb)).catch(rethrowFenced);
    const { names } = this.runtime;
    return kafkaTransaction(this.state, {
      send: async (records) => {
        if (records.length === 0) return;
        const partitions = await this.runtime.partitionsFor(records);
        const values = await this.runtime.wire.encode(records);
        for (const [i, r] of records.entries()) {
          const sealed = this.runtime.seal.sealed(r.validatedAs, values[i]!);
          const headers = sealed ? [{ [VALIDATED_AS_HEADER]: sealed }] : undefined;
          noteWritten(this.written, names.topic(r.topic), partitions[i]!);
          this.producer.produce(
            names.topic(r.topic),
            partitions[i],
            values[i]!,
            r.key ?? undefined,
            undefined,
            undefined,
            headers,
          );
        }
      },
      commit: async (offsets) => {
        const moved = offsets.find((o) => !this.assignedKeys.has(partitionKey(o.topic, o.partition)));
        if (this.revision !== revision || moved) {
          await call((cb) => this.producer.abortTransaction(30_000, cb)).catch(() => {});
          throw new FencedError('the group rebalanced during the transaction: aborted');
        }
        if (offsets.length) {
          const kafkaOffsets = offsets.map((o) => ({ ...o, topic: names.topic(o.topic) }));
          await call((cb) => this.producer.sendOffsetsToTransaction(kafkaOffsets, this.consumer, 30_000, cb));
        }
        await call((cb) => this.producer.commitTransaction(30_000, cb));
        this.runtime.log.debug({ offsets: offsets.map((o) => `${o.partition}:${o.offset}`) }, 'committed');
      },
      committed: (offsets) => {
        for (const { topic, partition, offset } of offsets)
          this.committed.set(partitionKey(topic, partition), offset);
      },
      abort: async () => {
        this.unsure = true;
        await call((cb) => this.producer.abortTransaction(30_000, cb)).catch(() => {});
      },
    });
  }

  async flushState(changes: readonly StateChange[]): Promise<void> {
    this.state.apply(changes);
  }

  /**
   * Seeks every assigned partition back to its committed offset, unless a rebalance already
   * restarted them there and nothing was handed out since.
   */
  async rewind(): Promise<void> {
    if (this.rebalanced) await this.reconcile();
    this.stale = false;
    if (this.unsure) {
      if (this.assigned.length) await this.fetchCommitted(this.assigned);
      await this.state.restore(this.state.held());
      this.unsure = false;
    }
    if (!this.handedOut) return;
    await this.dropAhead();
    this.position.clear();
    for (const a of this.consumer.assignments()) {
      const engine = this.runtime.names.engineTopic(a.topic);
      const offset = this.committed.get(partitionKey(engine, a.partition)) ?? 0;
      // A partition assigned a moment ago may refuse a seek: then the task's loop rewinds again later.
      await call((cb) => this.consumer.seek({ topic: a.topic, partition: a.partition, offset }, 10_000, cb));
    }
    this.handedOut = false;
  }

  async close(): Promise<void> {
    this.runtime.forget(this);
    await this.dropAhead();
    await new Promise<void>((resolve) => this.consumer.disconnect(() => resolve()));
    await new Promise<void>((resolve) => this.producer.disconnect(() => resolve()));
    await this.runtime.untilReadable(this.written);
  }
}
