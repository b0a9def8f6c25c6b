import type { Logger } from 'pino';
import { checkpoint } from './checkpoint.js';
import { deadLetterForRecord, RecordValidationError, TopicCodecs } from './codec.js';
import type { EngineMetrics } from './metrics.js';
import type { InputRecord, Processor, StateStore, StepContext } from './processor.js';
import { type LogRecord, type OutgoingRecord, partitionKey, type StateChange } from './records.js';
import { FencedError, type LogTask, type Runtime } from './runtime/types.js';
import type { Topology } from './topology.js';

/** Throw this for failures that will pass (rate limits, outages): the step is retried, never dead-lettered. */
export class RetryableError extends Error {}

/** An overlapped commit failed: what it carried is read again after a rewind. */
class CommitFailed extends Error {
  constructor(readonly original: unknown) {
    super(`commit failed: ${(original as Error)?.message ?? String(original)}`, { cause: original });
  }
}

/** The processor's own code failed on a batch (as opposed to the log or a sink failing around it). */
class ProcessorFailure extends Error {
  constructor(readonly original: unknown) {
    super((original as Error)?.message ?? String(original));
  }
}

export interface TaskOptions {
  readonly log: Logger;
  readonly metrics: EngineMetrics;
  readonly clock?: () => number;
  /** How long poll waits for new records before the loop checks timers and stop requests. */
  readonly pollWaitMs?: number;
  readonly batchSize?: number;
  /** Attempts of a whole batch before its records are tried one by one to find the poison one. */
  readonly maxAttempts?: number;
  readonly backoffMs?: (attempt: number) => number;
  /** Sleep between retries; the test driver replaces it to keep tests instant. */
  readonly sleep?: (ms: number) => Promise<void>;
}

const UNPARSED = Symbol('unparsed');

/**
 * An input whose writer validated it against this topic's schema: nothing to check, and the
 * value is parsed only if the processor reads it. forward() reuses its bytes.
 */
class TrustedInput implements InputRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly key: string | null;
  readonly timestamp: number;
  private parsed: unknown = UNPARSED;

  constructor(readonly record: LogRecord) {
    this.topic = record.topic;
    this.partition = record.partition;
    this.offset = record.offset;
    this.key = record.key;
    this.timestamp = record.timestamp;
  }

  get value(): unknown {
    if (this.parsed === UNPARSED) this.parsed = JSON.parse(this.record.value);
    return this.parsed;
  }

  /** Serialised, an input is the plain record it stands for. */
  toJSON(): InputRecord {
    const { topic, partition, offset, key, timestamp, value } = this;
    return { topic, partition, offset, key, timestamp, value };
  }
}

/** One step's buffered effects, seen by the processor through StepContext. */
class Step implements StepContext {
  readonly outputs: OutgoingRecord[] = [];
  readonly changes = new Map<string, StateChange>();
  readonly sinkWrites: (() => Promise<void>)[] = [];
  deadLettered = 0;

  constructor(
    readonly processor: string,
    readonly log: Logger,
    /** The value of a store key before this step: committed, or written by the commit in flight. */
    private readonly readBefore: (id: string, store: string, key: string) => string | null | undefined,
    private readonly codecs: TopicCodecs,
    private readonly topology: Topology,
    private readonly allowed: { writes: ReadonlySet<string>; stores: ReadonlySet<string> },
    readonly now: () => number,
  ) {}

  emit(topic: string, key: string | null, value: unknown): void {
    if (!this.allowed.writes.has(topic)) {
      throw new Error(`processor "${this.processor}" does not declare topic "${topic}" in writes`);
    }
    this.push(topic, key, value);
  }

  forward(input: InputRecord, topic: string, key: string | null = input.key): void {
    const stamp = this.codecs.stampOf(topic);
    if (
      !(input instanceof TrustedInput) ||
      input.record.validatedAs !== stamp ||
      !this.allowed.writes.has(topic)
    ) {
      this.emit(topic, key, input.value);
      return;
    }
    this.outputs.push({ topic, key, value: input.record.value, validatedAs: stamp });
  }

  /** Validates and stamps an output. */
  private push(topic: string, key: string | null, value: unknown): void {
    this.outputs.push({
      topic,
      key,
      value: this.codecs.encode(topic, value),
      validatedAs: this.codecs.stampOf(topic),
    });
  }

  deadLetter(input: InputRecord | null, reason: string): void {
    const record: LogRecord =
      input instanceof TrustedInput
        ? input.record
        : input
          ? { ...input, value: JSON.stringify(input.value) }
          : { topic: '(timer)', partition: -1, offset: -1, key: null, value: 'null', timestamp: this.now() };
    this.deadLetterRaw(record, reason);
  }

  deadLetterRaw(record: LogRecord, reason: string): void {
    const dl = deadLetterForRecord(record, reason, this.processor);
    this.push(this.topology.deadLetterTopic, dl.id, dl);
    this.deadLettered++;
  }

  sink(write: () => Promise<void>): void {
    this.sinkWrites.push(write);
  }

  store(name: string): StateStore {
    if (!this.allowed.stores.has(name))
      throw new Error(`processor "${this.processor}" does not declare store "${name}"`);
    return {
      get: <T>(key: string): T | undefined => {
        const id = stateId(name, key);
        const own = this.changes.get(id);
        const text = own ? own.value : this.readBefore(id, name, key);
        return text == null ? undefined : (JSON.parse(text) as T);
      },
      put: (key, value) =>
        this.changes.set(stateId(name, key), { store: name, key, value: JSON.stringify(value) }),
      delete: (key) => this.changes.set(stateId(name, key), { store: name, key, value: null }),
    };
  }
}

const stateId = (store: string, key: string) => `${store}\u0000${key}`;

/** A step whose commit is still in flight; its state changes are what the next step reads. */
interface PendingCommit {
  readonly done: Promise<void>;
  readonly changes: ReadonlyMap<string, StateChange>;
}

/**
 * Runs one processor on a runtime: poll a batch, process it, checkpoint; repeat. In run(), a
 * step's commit overlaps the next step's poll and processing (the next commit waits for it), so
 * the broker's round trips of one transaction cost no time on the CPU that processes the next.
 */
export class ProcessorTask {
  private task!: LogTask;
  private readonly codecs: TopicCodecs;
  private readonly clock: () => number;
  private nextTimer = 0;
  private readonly allowed: { writes: ReadonlySet<string>; stores: ReadonlySet<string> };
  private pending: PendingCommit | null = null;
  /** Input records committed since open(). */
  committedInputs = 0;

  constructor(
    private readonly runtime: Runtime,
    private readonly topology: Topology,
    readonly processor: Processor,
    private readonly opts: TaskOptions,
  ) {
    this.codecs = new TopicCodecs(topology);
    this.clock = opts.clock ?? Date.now;
    this.allowed = { writes: new Set(processor.writes), stores: new Set(processor.stores) };
  }

  /** A key's value in one of this processor's stores, as the last step left it. */
  readState<T = unknown>(store: string, key: string): T | undefined {
    const text = this.readBefore(stateId(store, key), store, key);
    return text == null ? undefined : (JSON.parse(text) as T);
  }

  private readonly readBefore = (id: string, store: string, key: string): string | null | undefined => {
    const pending = this.pending?.changes.get(id);
    return pending ? pending.value : this.task.readState(store, key);
  };

  async open(): Promise<this> {
    this.task = await this.runtime.openTask({
      group: this.processor.name,
      topics: this.processor.reads,
      stores: this.processor.stores,
    });
    if (this.processor.punctuate) this.nextTimer = this.clock() + this.processor.punctuate.everyMs;
    return this;
  }

  /**
   * Runs until the signal aborts; the step in progress finishes and commits first. A step that
   * fails outside the processor (the broker restarting, say) is logged and tried again: the
   * uncommitted records come back after the rewind.
   */
  async run(signal: AbortSignal): Promise<void> {
    let resync = false;
    for (let failures = 0; !signal.aborted; ) {
      try {
        // Until a rewind succeeds the task's view of offsets and state may be stale: no step before it.
        if (resync) {
          await this.settle().catch(() => {});
          await this.task.rewind();
        }
        resync = false;
        await this.advance(this.opts.pollWaitMs ?? 200, true);
        failures = 0;
      } catch (e) {
        failures++;
        resync = true;
        this.opts.metrics.errors.inc({ processor: this.processor.name });
        this.opts.log.error({ err: e, failures }, 'step failed outside the processor; retrying');
        await (this.opts.sleep ?? sleep)(Math.min(10_000, 100 * 2 ** failures));
      }
    }
    // The last batch's records are read again at the next start if this commit fails.
    await this.settle().catch((err) => this.opts.log.warn({ err }, 'last commit failed at stop'));
  }

  /** One step: a due timer, or one batch of input. Returns once it is committed, with its input count. */
  async step(waitMs = this.opts.pollWaitMs ?? 200): Promise<number> {
    return this.advance(waitMs, false);
  }

  /** One step; with `overlap` its commit may still be in flight when this returns. */
  private async advance(waitMs: number, overlap: boolean): Promise<number> {
    const timer = this.processor.punctuate;
    if (timer && this.clock() >= this.nextTimer) {
      await this.attempt([], (ctx) => timer.run(ctx), overlap);
      this.nextTimer = this.clock() + timer.everyMs;
      return 0;
    }
    const polled = await this.task.poll(this.opts.batchSize ?? this.processor.batchSize ?? 256, waitMs);
    if (polled.length === 0) {
      // Idle: surface a failed commit now rather than at the next record.
      await this.settle();
      return 0;
    }
    await this.attempt(polled, (ctx, inputs) => this.processor.process(inputs, ctx), overlap);
    return polled.length;
  }

  /**
   * One step whose input comes from outside the log (a file, an API page): body's emits and state
   * changes commit atomically, with the same retries as any step.
   */
  async stepWith(body: (ctx: StepContext) => Promise<void>): Promise<void> {
    await this.attempt([], (ctx) => body(ctx), false);
  }

  /** Waits for the commit in flight, if any, and rethrows its failure. */
  private async settle(): Promise<void> {
    const pending = this.pending;
    if (!pending) return;
    try {
      await pending.done;
    } catch (e) {
      // Its records must be read again: a retry of a later step must never commit past them.
      throw e instanceof FencedError ? e : new CommitFailed(e);
    } finally {
      if (this.pending === pending) this.pending = null;
    }
  }

  /**
   * Retries a failing batch with backoff, on the same records: nothing of a failed step was
   * committed, so the consumer need not move. A RetryableError is retried for as long as it
   * takes; any other error, once attempts run out, sends the batch through record by record so
   * that only the record that fails on its own is dead-lettered, with the error as its reason.
   */
  private async attempt(
    polled: readonly LogRecord[],
    body: (ctx: Step, inputs: InputRecord[]) => Promise<void>,
    overlap: boolean,
  ): Promise<void> {
    const maxAttempts = this.opts.maxAttempts ?? 3;
    let lastError: unknown;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.runStep(polled, body, overlap);
        return;
      } catch (e) {
        lastError = e;
        this.opts.metrics.errors.inc({ processor: this.processor.name });
        const fenced = e instanceof FencedError;
        this.opts.log.warn({ err: e, attempt, records: polled.length, fenced }, 'step failed');
        if (fenced) {
          // Another member owns these partitions now: drop the batch, read on from what is committed.
          await this.task.rewind();
          return;
        }
        // The log or a sink failing around the processor is no fault of these records: let the
        // caller rewind and try again later, and never dead-letter them for it.
        if (!(e instanceof ProcessorFailure) && !(e instanceof RetryableError)) throw e;
        if (e instanceof ProcessorFailure && attempt >= maxAttempts) break;
        await (this.opts.sleep ?? sleep)(
          this.opts.backoffMs?.(attempt) ?? Math.min(30_000, 100 * 2 ** attempt),
        );
      }
    }
    const reason = `processor failed ${maxAttempts} times: ${(lastError as Error).message}`;
    if (polled.length <= 1) {
      await this.runStep(
        polled,
        async (ctx) => {
          if (polled.length === 0) ctx.deadLetter(null, `timer ${reason}`);
          for (const r of polled) ctx.deadLetterRaw(r, reason);
        },
        overlap,
      );
      return;
    }
    for (const record of polled) await this.attempt([record], body, overlap);
  }

  private async runStep(
    polled: readonly LogRecord[],
    body: (ctx: Step, inputs: InputRecord[]) => Promise<void>,
    overlap: boolean,
  ): Promise<void> {
    const started = performance.now();
    const ctx = new Step(
      this.processor.name,
      this.opts.log,
      this.readBefore,
      this.codecs,
      this.topology,
      this.allowed,
      this.clock,
    );
    const inputs: InputRecord[] = [];
    const offsets = new Map<string, { topic: string; partition: number; offset: number }>();
    for (const r of polled) {
      try {
        inputs.push(
          this.codecs.trusts(r)
            ? new TrustedInput(r)
            : {
                topic: r.topic,
                partition: r.partition,
                offset: r.offset,
                key: r.key,
                timestamp: r.timestamp,
                value: this.codecs.decode(r.topic, r.value),
              },
        );
      } catch (e) {
        if (!(e instanceof RecordValidationError)) throw e;
        ctx.deadLetterRaw(r, `invalid input: ${e.message}`);
      }
    }
    // Within a partition polled records are in offset order: the last one gives the next offset.
    for (let i = polled.length - 1; i >= 0; i--) {
      const r = polled[i]!;
      const k = partitionKey(r.topic, r.partition);
      if (!offsets.has(k)) offsets.set(k, { topic: r.topic, partition: r.partition, offset: r.offset + 1 });
    }
    if (inputs.length > 0 || polled.length === 0) {
      try {
        await body(ctx, inputs);
      } catch (e) {
        throw e instanceof RetryableError ? e : new ProcessorFailure(e);
      }
    }
    // One transaction at a time: the previous step's commit lands before this one begins.
    await this.settle();
    const done = checkpoint(this.task, {
      sinkWrites: ctx.sinkWrites,
      state: [...ctx.changes.values()],
      outputs: ctx.outputs,
      offsets,
    }).then(() => this.committed(ctx, polled.length, started));
    if (!overlap) return done;
    // Observed by settle(); until then a failure must not count as unhandled.
    done.catch(() => {});
    this.pending = { done, changes: ctx.changes };
  }

  private committed(ctx: Step, inputs: number, started: number): void {
    this.committedInputs += inputs;
    const m = this.opts.metrics;
    const labels = { processor: this.processor.name };
    m.recordsIn.inc(labels, inputs);
    const perTopic = new Map<string, number>();
    for (const o of ctx.outputs) perTopic.set(o.topic, (perTopic.get(o.topic) ?? 0) + 1);
    for (const [topic, n] of perTopic) m.recordsOut.inc({ ...labels, topic }, n);
    if (ctx.deadLettered) m.deadLetters.inc(labels, ctx.deadLettered);
    m.stepSeconds.observe(labels, (performance.now() - started) / 1000);
  }

  async close(): Promise<void> {
    await this.settle().catch(() => {});
    await this.task?.close();
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
