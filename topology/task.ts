import type { Logger } from 'pino';
import type { DeadLetterCode } from '../schemas/dead-letter.js';
import { Checkpoint } from './checkpoint.js';
import { RecordValidationError, TopicCodecs } from './codec.js';
import { InputScope, inScope } from './input-scope.js';
import type { EngineMetrics } from './metrics.js';
import type { InputRecord, Processor, StepContext } from './processor.js';
import { GLOBAL, type LogRecord, type Offset, partitionKey, type StateChange, stateKey } from './records.js';
import { FencedError, type LogTask, type Runtime } from './runtime/types.js';
import { Step, TrustedInput } from './step.js';
import type { Topology } from './topology.js';
import { InFlightWindow, outcomeKey } from './window.js';

/** Throw this for failures that will pass (rate limits, outages): the step is retried, never dead-lettered. */
export class RetryableError extends Error {}

/** A transaction failed after steps went into it: all of them are read again after a rewind. */
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
  /**
   * In run(), how long one transaction keeps taking steps before it commits: Kafka Streams'
   * commit.interval.ms, 100 ms as under its exactly-once. A transaction also commits whenever
   * the input runs dry. step() and stepWith() always commit before they return.
   */
  readonly commitIntervalMs?: number;
  /** Most inputs this task takes before it stops polling (`run --max-articles`); the rest stay queued. */
  readonly maxInputs?: number;
}

/** A transaction committing while the next one takes steps; its state changes are what they read. */
interface Committing {
  readonly done: Promise<void>;
  readonly changes: ReadonlyMap<string, StateChange>;
}

/** What a transaction's steps did, counted once it commits. */
interface Tally {
  inputs: number;
  readonly deadLetters: Map<DeadLetterCode, number>;
  readonly outputs: Map<string, number>;
  /** What the inputs' work asked to run once their transaction has committed (see InputScope). */
  readonly afterCommit: (() => void)[];
}

/**
 * Runs one processor on a runtime: poll a batch, process it, add it to the transaction; repeat.
 * In run(), a transaction takes steps for up to commitIntervalMs, and while it commits the next
 * batch is already polled and processed (the next transaction begins once it has landed), so the
 * broker's round trips cost little time on the one CPU that processes. The cost: a crash redoes
 * up to one interval of work (its outputs were never visible), and readers see outputs up to an
 * interval later.
 */
export class ProcessorTask {
  private task!: LogTask;
  private readonly codecs: TopicCodecs;
  private readonly clock: () => number;
  private nextTimer = 0;
  private readonly allowed: { writes: ReadonlySet<string>; stores: ReadonlySet<string> };
  /** The transaction taking steps, with what they did. */
  private filling: { checkpoint: Checkpoint; tally: Tally } | null = null;
  private committing: Committing | null = null;
  /** Commits the open transaction when its interval is up (see commitWhenDue). */
  private commitTimer: NodeJS.Timeout | null = null;
  /** A step is being added to the open transaction: it must not be committed under it. */
  private adding = false;
  /** Inputs whose work is in flight across steps, for a processor with a window (see run()). */
  private readonly window: InFlightWindow | null;
  /** The scope each input in the window started its work in, by outcomeKey: settled by its step. */
  private readonly scopes = new Map<string, InputScope>();
  /** Input records committed since open(). */
  committedInputs = 0;
  /** Input records polled and not yet committed: with committedInputs, what maxInputs counts. */
  private pendingInputs = 0;
  /** The last poll found nothing (or maxInputs was reached). */
  private drained = false;
  /** run()'s signal: once it aborts, a failing step is given up (its inputs stay uncommitted), not retried. */
  private stopping: AbortSignal | null = null;

  constructor(
    private readonly runtime: Runtime,
    private readonly topology: Topology,
    readonly processor: Processor,
    private readonly opts: TaskOptions,
  ) {
    this.codecs = new TopicCodecs(topology);
    this.clock = opts.clock ?? Date.now;
    this.allowed = { writes: new Set(processor.writes), stores: new Set(processor.stores) };
    this.window = processor.window ? new InFlightWindow(processor.window.inFlight) : null;
    this.partitioned = processor.scope !== 'global' && processor.reads.length > 0;
  }

  /**
   * The processor's state and outputs are scoped by input partition (Kafka Streams' tasks): each
   * partition has its own store, restored on whichever member owns it. A 'global' processor, or
   * one that reads no topic, has one store.
   */
  private readonly partitioned: boolean;

  /** A key's value in one of this processor's stores (a partition's, or GLOBAL), as the last step left it. */
  readState<T = unknown>(store: string, key: string, partition = GLOBAL): T | undefined {
    const text = this.readBefore(stateKey(store, key, partition), store, key, partition);
    return text == null ? undefined : (JSON.parse(text) as T);
  }

  private readonly readBefore = (
    id: string,
    store: string,
    key: string,
    partition: number,
  ): string | null | undefined => {
    const change = this.filling?.checkpoint.changes.get(id) ?? this.committing?.changes.get(id);
    return change ? change.value : this.task.readState(store, key, partition);
  };

  async open(): Promise<this> {
    this.task = await this.runtime.openTask({
      group: this.processor.name,
      topics: this.processor.reads,
      stores: this.processor.stores,
      scope: this.partitioned ? 'partition' : 'global',
    });
    if (this.processor.punctuate) this.nextTimer = this.clock() + this.processor.punctuate.everyMs;
    return this;
  }

  /**
   * Runs until the signal aborts; the transaction in progress commits first. A step that fails
   * outside the processor (the broker restarting, say) is logged and tried again: the uncommitted
   * records come back after the rewind.
   */
  async run(signal: AbortSignal): Promise<void> {
    this.stopping = signal;
    let resync = false;
    for (let failures = 0; !signal.aborted; ) {
      try {
        // Until a rewind succeeds the task's view of offsets and state may be stale: no step before it.
        if (resync) {
          this.window?.clear();
          this.scopes.clear();
          await this.abandon();
          await this.task.rewind();
          this.pendingInputs = 0;
        }
        resync = false;
        const waitMs = this.opts.pollWaitMs ?? 200;
        await (this.window ? this.advanceWindow(this.window, waitMs) : this.advance(waitMs, true));
        failures = 0;
      } catch (e) {
        // A step given up because we stop (its calls aborted): nothing to retry, nothing to report.
        if (signal.aborted) break;
        failures++;
        resync = true;
        this.opts.metrics.errors.inc({ processor: this.processor.name });
        this.opts.log.error({ err: e, failures }, 'step failed outside the processor; retrying');
        await (this.opts.sleep ?? sleep)(Math.min(10_000, 100 * 2 ** failures));
      }
    }
    // If this fails, what was not committed is read again at the next start.
    await this.flush().catch((err) => this.opts.log.warn({ err }, 'last commit failed at stop'));
  }

  /** One step: a due timer, or one batch of input. Returns once it is committed, with its input count. */
  async step(waitMs = this.opts.pollWaitMs ?? 200): Promise<number> {
    return this.advance(waitMs, false);
  }

  /**
   * Nothing to do right now: the last poll found no input (or maxInputs is reached) and nothing
   * polled is in flight or uncommitted. (Consumer lag cannot tell this on Kafka, where each
   * transaction's commit marker takes an offset that no record fills.)
   */
  /** The processor's name (what health reports). */
  get name(): string {
    return this.processor.name;
  }

  /** Open, and holding its group's assignment (see LogTask.inGroup): one condition of readiness. */
  get inGroup(): boolean {
    return this.task !== undefined && (this.task.inGroup?.() ?? true);
  }

  get idle(): boolean {
    return (
      this.drained &&
      this.pendingInputs === 0 &&
      (this.window?.size ?? 0) === 0 &&
      this.filling === null &&
      this.committing === null
    );
  }

  /** Polls at most max records, and none past maxInputs (then it waits as if the input were dry). */
  private async poll(max: number, waitMs: number): Promise<LogRecord[]> {
    const allowed =
      (this.opts.maxInputs ?? Number.POSITIVE_INFINITY) - this.committedInputs - this.pendingInputs;
    if (allowed <= 0) {
      this.drained = true;
      if (waitMs > 0) await sleep(waitMs);
      return [];
    }
    const records = await this.task.poll(Math.min(max, allowed), waitMs);
    this.pendingInputs += records.length;
    this.drained = records.length === 0;
    return records;
  }

  /**
   * Runs the processor's timer if it is due: once in a step of its own, or for a partitioned
   * processor once per input partition this member owns, each in that partition's scope (its
   * store, its transaction), as Kafka Streams punctuates per task. Says whether it ran.
   */
  private async runDueTimer(interval: boolean): Promise<boolean> {
    const timer = this.processor.punctuate;
    if (!timer || this.clock() < this.nextTimer) return false;
    for (const scope of this.partitioned ? this.task.owned() : [GLOBAL])
      await this.attempt([], (ctx) => timer.run(ctx), interval, scope);
    this.nextTimer = this.clock() + timer.everyMs;
    return true;
  }

  /** One step; `interval`: it may stay in an open transaction, or one still committing, on return. */
  private async advance(waitMs: number, interval: boolean): Promise<number> {
    if (await this.runDueTimer(interval)) return 0;
    const batchSize = this.opts.batchSize ?? this.processor.batchSize ?? 256;
    const polled = await this.poll(batchSize, waitMs);
    const linger = interval && polled.length ? this.processor.lingerMs : undefined;
    if (linger) {
      const until = performance.now() + linger;
      for (let left = linger; polled.length < batchSize && left > 0; left = until - performance.now())
        polled.push(...(await this.poll(batchSize - polled.length, left)));
    }
    if (polled.length === 0) {
      // Input ran dry: commit now instead of at the end of the interval.
      await this.flush();
      return 0;
    }
    await this.attempt(polled, (ctx, inputs) => this.processor.process(inputs, ctx), interval);
    return polled.length;
  }

  /**
   * One turn of run() for a processor with a window: inputs start their work as soon as they are
   * polled, up to the window's capacity, whatever is committing; the inputs finished in order
   * (per partition) then take one step. So a step never waits for its slowest input while slots
   * sit idle, and the outputs of an input commit with the offset that moves past it.
   */
  private async advanceWindow(window: InFlightWindow, waitMs: number): Promise<void> {
    if (await this.runDueTimer(true)) return;
    let polled = 0;
    if (window.free > 0) {
      const batchSize = this.opts.batchSize ?? this.processor.batchSize ?? 256;
      // With work in flight, new input must not keep finished work from its step: no waiting here.
      const records = await this.poll(Math.min(window.free, batchSize), window.size > 0 ? 0 : waitMs);
      for (const r of records) window.add(r, this.startWork(r));
      polled = records.length;
    }
    if (window.size === 0) {
      // Input ran dry: commit now instead of at the end of the interval.
      if (polled === 0) await this.flush();
      return;
    }
    if (!window.hasReady && (polled === 0 || window.free === 0)) await window.waitForWork(waitMs);
    if (!window.hasReady) return;
    const { records, outcomes } = window.takeReady();
    const scopes = new Map<string, InputScope>();
    for (const r of records) {
      const k = outcomeKey(r);
      scopes.set(k, this.scopes.get(k)!);
      this.scopes.delete(k);
    }
    const work = this.processor.window!;
    await this.attempt(
      records,
      async (ctx, inputs) => {
        for (const input of inputs) await work.finish(input, outcomes.get(outcomeKey(input))!, ctx);
      },
      true,
      GLOBAL,
      scopes,
    );
  }

  /** Starts an input's work; one that fails its schema gets none (its step dead-letters it). */
  private startWork(r: LogRecord): Promise<unknown> | { ok: false; error: unknown } {
    let input: InputRecord;
    try {
      input = this.codecs.trusts(r) ? new TrustedInput(r) : { ...r, value: this.codecs.decodeRecord(r) };
    } catch (error) {
      return { ok: false, error };
    }
    // A synchronous throw in start() is its failure like any other.
    const scope = new InputScope(this.partitioned ? r.partition : GLOBAL);
    this.scopes.set(outcomeKey(r), scope);
    return inScope(scope, () => Promise.resolve().then(() => this.processor.window!.start(input)));
  }

  /**
   * One step whose input comes from outside the log (a file, an API page): body's emits and state
   * changes commit atomically, with the same retries as any step.
   */
  async stepWith(body: (ctx: StepContext) => Promise<void>): Promise<void> {
    await this.attempt([], (ctx) => body(ctx), false);
  }

  /** Commits the open transaction, if any, and waits until nothing is left committing. */
  private async flush(): Promise<void> {
    this.startCommit();
    await this.settle();
  }

  /** Gives up the open transaction and waits out one committing: after this, rewind. */
  private async abandon(): Promise<void> {
    this.clearCommitTimer();
    const filling = this.filling;
    this.filling = null;
    await filling?.checkpoint.abort();
    await this.settle().catch(() => {});
  }

  private clearCommitTimer(): void {
    if (this.commitTimer) clearTimeout(this.commitTimer);
    this.commitTimer = null;
  }

  /** Waits for the transaction committing, if any, and rethrows its failure. */
  private async settle(): Promise<void> {
    const committing = this.committing;
    if (!committing) return;
    try {
      await committing.done;
    } catch (e) {
      // Its records must be read again: a retry of a later step must never commit past them.
      throw e instanceof FencedError ? e : new CommitFailed(e);
    } finally {
      if (this.committing === committing) this.committing = null;
    }
  }

  /** Sets the open transaction committing; settle() waits for it. */
  private startCommit(): void {
    this.clearCommitTimer();
    const filling = this.filling;
    if (!filling) return;
    this.filling = null;
    const { checkpoint, tally } = filling;
    const done = checkpoint.commit().then(() => this.committed(tally, checkpoint.begunAt));
    // Observed by settle(); until then a failure must not count as unhandled.
    done.catch(() => {});
    this.committing = { done, changes: checkpoint.changes };
  }

  /**
   * Retries a failing batch with backoff, on the same records: nothing of a failed step went into
   * the transaction, so the consumer need not move. A RetryableError is retried for as long as it
   * takes; any other error, once attempts run out, sends the batch through record by record so
   * that only the record that fails on its own is dead-lettered, with the error as its reason.
   *
   * Whatever finishes the records (their step, or their dead letters) settles what their work
   * used (see InputScope): the scopes their work started in outside the step (`inputScopes`, by
   * outcomeKey), and those of every try. Without it a reply an input used before it was
   * dead-lettered would stay in the response journal for good.
   */
  private async attempt(
    polled: readonly LogRecord[],
    body: (ctx: StepContext, inputs: InputRecord[], step: Step) => Promise<void>,
    interval: boolean,
    timerScope = GLOBAL,
    inputScopes?: ReadonlyMap<string, InputScope>,
  ): Promise<void> {
    const maxAttempts = this.opts.maxAttempts ?? 3;
    const settling: Settling = { tries: [], inputs: [] };
    for (const r of polled) {
      const scope = inputScopes?.get(outcomeKey(r));
      if (scope) settling.inputs.push(scope);
    }
    let lastError: unknown;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.runStep(polled, body, interval, timerScope, settling);
        return;
      } catch (e) {
        // Stopping: the step's inputs stay uncommitted and are read again at the next start; a
        // retry could only fail the same way (its calls were given up), and dead-lettering them
        // would spend inputs nobody refused.
        if (this.stopping?.aborted && (e instanceof ProcessorFailure || e instanceof RetryableError)) throw e;
        lastError = e;
        this.opts.metrics.errors.inc({ processor: this.processor.name });
        const fenced = e instanceof FencedError;
        this.opts.log.warn({ err: e, attempt, records: polled.length, fenced }, 'step failed');
        if (fenced) {
          // Another member owns these partitions now: drop what is uncommitted, read on from what is.
          this.window?.clear();
          this.scopes.clear();
          await this.abandon();
          await this.task.rewind();
          this.pendingInputs = 0;
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
        async (ctx, _inputs, step) => {
          if (polled.length === 0) ctx.deadLetter(null, 'processor-failed', `timer ${reason}`);
          for (const r of polled) step.deadLetterRaw(r, 'processor-failed', reason);
        },
        interval,
        timerScope,
        settling,
        true,
      );
      return;
    }
    // A try of the whole batch may have used replies of any of its records: each record's own
    // tries use them again (the journal still holds them), so each settles with its own step.
    for (const record of polled) await this.attempt([record], body, interval, timerScope, inputScopes);
  }

  /**
   * Runs body over the polled records in one step. A partitioned processor gets them one input
   * partition at a time (concurrently), each through that partition's view of the step; a timer
   * (nothing polled) runs in timerScope.
   */
  private async runStep(
    polled: readonly LogRecord[],
    body: (ctx: StepContext, inputs: InputRecord[], step: Step) => Promise<void>,
    interval: boolean,
    timerScope: number,
    settling: Settling,
    whole = false,
  ): Promise<void> {
    const ctx = new Step(
      this.processor.name,
      this.opts.log,
      this.readBefore,
      this.codecs,
      this.topology,
      this.allowed,
      this.clock,
      timerScope,
      this.partitioned,
    );
    const inputs: InputRecord[] = [];
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
                value: this.codecs.decodeRecord(r),
              },
        );
      } catch (e) {
        if (!(e instanceof RecordValidationError)) throw e;
        ctx.deadLetterRaw(r, 'invalid-input', `invalid input: ${e.message}`);
      }
    }
    if (inputs.length > 0 || polled.length === 0) {
      try {
        // Work a processor does inside its step (process(), not a window) settles with that step.
        const scoped = (c: StepContext, p: number, some: InputRecord[]) => {
          const scope = new InputScope(p);
          settling.tries.push(scope);
          return inScope(scope, () => body(c, some, ctx));
        };
        if (!this.partitioned || whole || inputs.length === 0) await scoped(ctx, ctx.scope, inputs);
        else {
          const parts = byPartition(inputs);
          if (parts.size === 1) {
            const [p, only] = parts.entries().next().value!;
            await scoped(ctx.scoped(p), p, only);
          } else await Promise.all([...parts].map(([p, some]) => scoped(ctx.scoped(p), p, some)));
        }
      } catch (e) {
        throw e instanceof RetryableError ? e : new ProcessorFailure(e);
      }
    }
    // A step that read nothing and changed nothing (a timer with nothing to do) opens no
    // transaction: an empty commit would only keep the task from ever looking idle.
    if (
      polled.length === 0 &&
      ctx.outputs.length === 0 &&
      ctx.changes.size === 0 &&
      ctx.sinkWrites.length === 0 &&
      ctx.deadLettered.size === 0 &&
      ctx.onCommitted.length === 0 &&
      settling.tries.every((s) => s.empty)
    )
      return;
    this.adding = true;
    let filling: { checkpoint: Checkpoint; tally: Tally };
    let settlement: ReturnType<InputScope['settlement']>[] = [];
    try {
      if (!this.filling) {
        // One transaction at a time: the one committing lands before the next begins.
        await this.settle();
        this.filling = {
          checkpoint: await Checkpoint.begin(this.task),
          tally: { inputs: 0, deadLetters: new Map(), outputs: new Map(), afterCommit: [] },
        };
      }
      filling = this.filling;
      settlement = [...settling.inputs, ...settling.tries].map((s) => s.settlement());
      try {
        await filling.checkpoint.add({
          sinkWrites: ctx.sinkWrites,
          state: [...ctx.changes.values()],
          outputs: [...ctx.outputs, ...settlement.flatMap((s) => s.records)],
          offsets: nextOffsets(polled),
        });
      } catch (e) {
        if (!filling.checkpoint.broken) throw e;
        await this.abandon();
        throw e instanceof FencedError || !interval ? e : new CommitFailed(e);
      }
    } finally {
      this.adding = false;
    }
    const { checkpoint, tally } = filling;
    tally.inputs += polled.length;
    for (const s of settlement) tally.afterCommit.push(...s.committed);
    tally.afterCommit.push(...ctx.onCommitted);
    for (const [code, n] of ctx.deadLettered)
      tally.deadLetters.set(code, (tally.deadLetters.get(code) ?? 0) + n);
    for (const o of ctx.outputs) tally.outputs.set(o.topic, (tally.outputs.get(o.topic) ?? 0) + 1);
    if (interval) {
      this.commitWhenDue();
      return;
    }
    this.filling = null;
    await checkpoint.commit();
    this.committed(tally, checkpoint.begunAt);
  }

  /**
   * Commits the open transaction once it is commitIntervalMs old: now, or from a timer, which
   * fires while the next step is still processing. A slow step (an LLM call, say) thus never
   * keeps a transaction open past the interval, nor near the log's transaction timeout.
   */
  private commitWhenDue(): void {
    const filling = this.filling;
    if (!filling) return;
    const left = (this.opts.commitIntervalMs ?? 100) - (performance.now() - filling.checkpoint.begunAt);
    if (left <= 0) {
      this.startCommit();
      return;
    }
    this.commitTimer ??= setTimeout(() => {
      this.commitTimer = null;
      // A step half-way into the transaction finishes first, then checks again.
      if (!this.adding) this.commitWhenDue();
    }, left).unref();
  }

  private committed(tally: Tally, begunAt: number): void {
    this.committedInputs += tally.inputs;
    this.pendingInputs = Math.max(0, this.pendingInputs - tally.inputs);
    const m = this.opts.metrics;
    const labels = { processor: this.processor.name };
    m.recordsIn.inc(labels, tally.inputs);
    for (const [topic, n] of tally.outputs) m.recordsOut.inc({ ...labels, topic }, n);
    for (const [code, n] of tally.deadLetters) m.deadLetters.inc({ ...labels, code }, n);
    m.transactionSeconds.observe(labels, (performance.now() - begunAt) / 1000);
    for (const done of tally.afterCommit) done();
  }

  async close(): Promise<void> {
    await this.abandon();
    await this.task?.close();
  }
}

/** What the step that finishes some records settles (see ProcessorTask.attempt). */
interface Settling {
  /** Each try's scope of the work done inside the step. */
  readonly tries: InputScope[];
  /** The scopes the records' work started in, outside the step. */
  readonly inputs: InputScope[];
}

/** Inputs by partition number (their scope), each in the order polled. */
function byPartition(inputs: readonly InputRecord[]): Map<number, InputRecord[]> {
  const parts = new Map<number, InputRecord[]>();
  for (const r of inputs) {
    const some = parts.get(r.partition);
    if (some) some.push(r);
    else parts.set(r.partition, [r]);
  }
  return parts;
}

/** The next offset per partition: within a partition polled records are in offset order. */
function nextOffsets(polled: readonly LogRecord[]): Map<string, Offset> {
  const offsets = new Map<string, Offset>();
  let last: Offset | undefined;
  for (const r of polled) {
    if (last?.partition !== r.partition || last.topic !== r.topic) {
      const k = partitionKey(r.topic, r.partition);
      last = offsets.get(k) ?? { topic: r.topic, partition: r.partition, offset: 0 };
      offsets.set(k, last);
    }
    last.offset = r.offset + 1;
  }
  return offsets;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
