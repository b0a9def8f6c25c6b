import rdkafka from 'node-rdkafka';
import { type LogRecord, partitionKey, type StateChange } from '../../records.js';
import type { LogTask, LogTransaction, TaskSpec } from '../types.js';
import type { KafkaConnection } from './connection.js';
import type { ChangelogState } from './state.js';
import { kafkaTransaction, rethrowFenced } from './transaction.js';
import { rdkafkaRecord, VALIDATED_AS_HEADER } from './wire.js';

/** The header list that stamps a produced record; one shared list per stamp. */
const stampHeaders = new Map<string, rdkafka.MessageHeader[]>();
function headersFor(validatedAs: string | undefined): rdkafka.MessageHeader[] | undefined {
  if (!validatedAs) return undefined;
  let headers = stampHeaders.get(validatedAs);
  if (!headers) {
    headers = [{ [VALIDATED_AS_HEADER]: validatedAs }];
    stampHeaders.set(validatedAs, headers);
  }
  return headers;
}

const call = <T = void>(
  fn: (cb: (err: rdkafka.LibrdKafkaError | null | undefined, value?: T) => void) => void,
): Promise<T> =>
  new Promise((resolve, reject) => fn((err, value) => (err ? reject(err) : resolve(value as T))));

/**
 * The throughput path: librdkafka's pull consumer (`consume(n)`) and its transactional producer.
 * The transactional id is the group's, so a restarted process fences its killed predecessor at
 * once instead of leaving its open transaction to block read_committed readers until it times out.
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
  private ahead: Promise<rdkafka.Message[]> | null = null;
  private leftover: rdkafka.Message[] = [];

  private constructor(
    private readonly runtime: KafkaConnection,
    private readonly group: string,
    private readonly topics: readonly string[],
    private readonly state: ChangelogState,
    private readonly consumer: rdkafka.KafkaConsumer,
    private readonly producer: rdkafka.Producer,
  ) {}

  static async open(runtime: KafkaConnection, spec: TaskSpec, state: ChangelogState): Promise<RdkafkaTask> {
    const brokers = runtime.url.brokers.join(',');
    const producer = new rdkafka.Producer({
      'metadata.broker.list': brokers,
      'transactional.id': `bioalchemy-${spec.group}`,
      'transaction.timeout.ms': 10_000,
      'enable.idempotence': true,
      'linger.ms': 5,
    });
    await call((cb) => producer.connect({}, (err) => cb(err)));
    await call((cb) => producer.initTransactions(30_000, cb));
    await state.restore();
    const consumer = new rdkafka.KafkaConsumer(
      {
        'group.id': spec.group,
        // Static membership: a restarted process takes over its killed predecessor's partitions
        // at once, without waiting for that session to expire.
        'group.instance.id': `${spec.group}-0`,
        'session.timeout.ms': 6_000,
        'metadata.broker.list': brokers,
        'enable.auto.commit': false,
        'enable.auto.offset.store': false,
        'isolation.level': 'read_committed',
        'fetch.wait.max.ms': 50,
      },
      { 'auto.offset.reset': 'earliest' },
    );
    await call((cb) => consumer.connect({}, (err) => cb(err)));
    const task = new RdkafkaTask(runtime, spec.group, spec.topics, state, consumer, producer);
    // librdkafka reports broker outages as error events and recovers by itself; only fatal ones end the task.
    for (const client of [producer, consumer] as rdkafka.Client<string>[]) {
      client.on('event.error', (err: rdkafka.LibrdKafkaError) => {
        if (err.isFatal) task.fatal = new Error(`librdkafka: ${err.message}`);
      });
    }
    for (const [k, v] of await runtime.committedOffsets(spec.group, spec.topics)) task.committed.set(k, v);
    consumer.subscribe([...spec.topics]);
    return task;
  }

  async poll(max: number, waitMs: number): Promise<LogRecord[]> {
    if (this.fatal) throw this.fatal;
    this.consumer.setDefaultConsumeTimeout(Math.max(1, waitMs));
    const ahead = this.ahead;
    this.ahead = null;
    const gathered = await (ahead ?? this.fetch(max));
    const fetched = this.leftover.length ? [...this.leftover, ...gathered] : gathered;
    this.leftover = fetched.splice(max);
    this.ahead = this.fetch(max);
    const messages: rdkafka.Message[] = [];
    // Messages come in runs of one partition: look its position up once a run.
    let run = null as { topic: string; partition: number; key: string; next: number } | null;
    for (const m of fetched) {
      if (run?.partition !== m.partition || run.topic !== m.topic) {
        if (run) this.position.set(run.key, run.next);
        const key = partitionKey(m.topic, m.partition);
        run = {
          topic: m.topic,
          partition: m.partition,
          key,
          next: this.position.get(key) ?? this.committed.get(key) ?? 0,
        };
      }
      if (m.offset < run.next) continue;
      run.next = m.offset + 1;
      messages.push(m);
    }
    if (run) this.position.set(run.key, run.next);
    const values = await this.runtime.wire.decode(messages);
    return messages.map((m, i) => rdkafkaRecord(m, values[i]!));
  }

  /** Starts librdkafka's worker gathering up to max messages; the result is awaited later. */
  private fetch(max: number): Promise<rdkafka.Message[]> {
    const batch = call<rdkafka.Message[]>((cb) => this.consumer.consume(max, cb));
    batch.catch(() => {});
    return batch;
  }

  /** Waits for the batch gathered ahead and forgets it: a rewind reads those records again. */
  private async dropAhead(): Promise<void> {
    const ahead = this.ahead;
    this.ahead = null;
    this.leftover = [];
    await ahead?.catch(() => {});
  }

  readState(store: string, key: string): string | undefined {
    return this.state.get(store, key);
  }

  async begin(): Promise<LogTransaction> {
    await call((cb) => this.producer.beginTransaction(cb)).catch(rethrowFenced);
    return kafkaTransaction(this.state, {
      send: async (records) => {
        if (records.length === 0) return;
        const partitions = await this.runtime.partitionsFor(records);
        const values = await this.runtime.wire.encode(records);
        for (const [i, r] of records.entries()) {
          const headers = headersFor(r.validatedAs);
          this.producer.produce(
            r.topic,
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
        if (offsets.length) {
          await call((cb) => this.producer.sendOffsetsToTransaction([...offsets], this.consumer, 30_000, cb));
        }
        await call((cb) => this.producer.commitTransaction(30_000, cb));
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

  /** Seeks every assigned partition back to its committed offset. */
  async rewind(): Promise<void> {
    if (this.unsure) {
      for (const [k, v] of await this.runtime.committedOffsets(this.group, this.topics))
        this.committed.set(k, v);
      await this.state.restore();
      this.unsure = false;
    }
    await this.dropAhead();
    this.position.clear();
    for (const a of this.consumer.assignments()) {
      const offset = this.committed.get(partitionKey(a.topic, a.partition)) ?? 0;
      await call((cb) => this.consumer.seek({ topic: a.topic, partition: a.partition, offset }, 10_000, cb));
    }
  }

  async close(): Promise<void> {
    this.runtime.forget(this);
    await this.dropAhead();
    await new Promise<void>((resolve) => this.consumer.disconnect(() => resolve()));
    await new Promise<void>((resolve) => this.producer.disconnect(() => resolve()));
  }
}
