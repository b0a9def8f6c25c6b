import type { Logger } from 'pino';
import type { DeadLetterCode } from '../schemas/dead-letter.js';

/**
 * One input record handed to a processor: the value is schema-checked. A value the engine itself
 * validated when writing it is parsed only when first read, so a processor that only forwards
 * such records never pays for parsing them.
 */
export interface InputRecord<V = unknown> {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly key: string | null;
  readonly value: V;
  readonly timestamp: number;
}

/** A key-value store; reads inside a step see that step's own uncommitted writes. */
export interface StateStore {
  get<T = unknown>(key: string): T | undefined;
  put(key: string, value: unknown): void;
  delete(key: string): void;
}

/** What a processor may do during one step; all of it becomes visible atomically, or not at all. */
export interface StepContext {
  readonly processor: string;
  readonly log: Logger;
  /** Now, as the runtime sees it (the test driver controls it). */
  now(): number;
  /** Queue an output; the value is validated against the topic's schema at once. */
  emit(topic: string, key: string | null, value: unknown): void;
  /**
   * Queue an input record's value, unchanged, as an output (by default with the input's key).
   * Where the writer validated it for the same schema the output topic has, its bytes are reused
   * as they are; otherwise this is emit().
   */
  forward(input: InputRecord, topic: string, key?: string | null): void;
  /**
   * Refuse an input, or a part of it, with a code from the closed list (what dashboards and alerts
   * group by) and a reason in words; it goes to the dead-letter topic in the same step. The payload
   * is the input unless given (a model's raw reply, say); one input may have several dead letters
   * with different reasons (one per failed passage).
   */
  deadLetter(input: InputRecord | null, code: DeadLetterCode, reason: string, payload?: string): void;
  store(name: string): StateStore;
  /** Queue a write to an external system (ClickHouse...); it runs first at checkpoint and must be idempotent. */
  sink(write: () => Promise<void>): void;
  /**
   * Run `fn` once this step's transaction has committed, never for a step that fails (it is
   * replayed): what must count each committed output once, such as a metric by reason code.
   */
  onCommit(fn: () => void): void;
}

/** How one input's slow work ended: its value, or the error it failed with. */
export type Outcome<R = unknown> =
  | { readonly ok: true; readonly value: R }
  | { readonly ok: false; readonly error: unknown };

/**
 * Slow per-input work (LLM calls), split so it can run outside steps: start() runs concurrently
 * with everything, touches no state and emits nothing; finish() runs inside a step, in offset
 * order per partition, and turns the outcome into outputs, state and dead letters.
 */
export interface WindowedWork<R = unknown> {
  /** Most inputs whose work is in flight at once, across batches and commits (Flink's capacity). */
  readonly inFlight: number;
  start(input: InputRecord): Promise<R>;
  finish(input: InputRecord, outcome: Outcome<R>, ctx: StepContext): void | Promise<void>;
}

export interface Processor {
  readonly name: string;
  readonly description?: string;
  readonly reads: readonly string[];
  readonly writes: readonly string[];
  readonly stores: readonly string[];
  /** External systems written idempotently before the step commits (e.g. "clickhouse:qa"). */
  readonly sinks?: readonly string[];
  /** Declared in the topology so the graph is whole, but not run until its issue lands. */
  readonly placeholder?: boolean;
  /** Most records handed to one call of process(). */
  readonly batchSize?: number;
  /**
   * In run(), how long a step waits for more input once some has come, up to batchSize (Kafka's
   * fetch.max.wait.ms with fetch.min.bytes). For a sink into ClickHouse, where each step's insert
   * is a part: steps of a few records made ten parts a second, each merged again and each loaded
   * at the next start until the engine removes it.
   */
  readonly lingerMs?: number;
  /** Handles a batch; slow work inside should run concurrently (see mapConcurrent). */
  process(batch: readonly InputRecord[], ctx: StepContext): Promise<void>;
  /** Work kept in flight across steps by run(); process() must then be windowed()'s. */
  readonly window?: WindowedWork;
  /**
   * 'partition' (the default): state is per input partition, so many workers can share the input.
   * 'global': the processor needs every partition's records in one view (the sampler's selection
   * spans all QA), so one worker owns all its input partitions and its state is one store.
   */
  readonly scope?: 'partition' | 'global';
  /** A timer: runs in a step of its own every `everyMs`, with or without new input. */
  readonly punctuate?: { readonly everyMs: number; run(ctx: StepContext): Promise<void> };
}

/** Runs fn over items with at most `limit` in flight; results keep input order. */
export async function mapConcurrent<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
