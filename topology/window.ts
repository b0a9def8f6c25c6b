import type { Outcome, Processor, WindowedWork } from './processor.js';
import { type LogRecord, partitionKey } from './records.js';

interface Entry {
  readonly record: LogRecord;
  outcome: Outcome | null;
}

/**
 * The inputs whose slow work (LLM calls) is in flight, as Flink's ordered async I/O keeps them:
 * work starts as soon as an input is polled and ends in any order, but inputs leave the window in
 * offset order per partition. An input that finished early waits here, outcome and all, until
 * every input before it in its partition has finished: its outputs must go into the transaction
 * that moves the committed offset past it, or a crash would read it again and emit them twice.
 */
export class InFlightWindow {
  /** Per partition, the inputs in offset order, finished or not. */
  private readonly queues = new Map<string, Entry[]>();
  private count = 0;
  private wake: (() => void) | null = null;
  /** Bumped by clear(): work started before it ends into nothing. */
  private generation = 0;

  constructor(readonly capacity: number) {}

  /** Inputs in the window: started, or finished and waiting for the prefix. */
  get size(): number {
    return this.count;
  }

  get free(): number {
    return Math.max(0, this.capacity - this.count);
  }

  /** Whether takeReady() has something to give: some partition's oldest input has finished. */
  get hasReady(): boolean {
    for (const queue of this.queues.values()) if (queue[0]?.outcome) return true;
    return false;
  }

  /** Adds an input whose work is `work`; an input that needs no work is added with its outcome. */
  add(record: LogRecord, work: Promise<unknown> | Outcome): void {
    const key = partitionKey(record.topic, record.partition);
    let queue = this.queues.get(key);
    if (!queue) {
      queue = [];
      this.queues.set(key, queue);
    }
    const entry: Entry = { record, outcome: null };
    queue.push(entry);
    this.count++;
    if (!(work instanceof Promise)) {
      this.settle(entry, work);
      return;
    }
    const generation = this.generation;
    work.then(
      (value) => generation === this.generation && this.settle(entry, { ok: true, value }),
      (error) => generation === this.generation && this.settle(entry, { ok: false, error }),
    );
  }

  private settle(entry: Entry, outcome: Outcome): void {
    entry.outcome = outcome;
    this.wake?.();
  }

  /**
   * Removes and returns, per partition, the finished inputs at the head of the queue, in offset
   * order. What is behind an unfinished input stays.
   */
  takeReady(): { records: LogRecord[]; outcomes: Map<string, Outcome> } {
    const records: LogRecord[] = [];
    const outcomes = new Map<string, Outcome>();
    for (const [key, queue] of this.queues) {
      let n = 0;
      while (n < queue.length && queue[n]!.outcome) n++;
      for (const entry of queue.splice(0, n)) {
        records.push(entry.record);
        outcomes.set(outcomeKey(entry.record), entry.outcome!);
      }
      if (queue.length === 0) this.queues.delete(key);
    }
    this.count -= records.length;
    return { records, outcomes };
  }

  /** Resolves when some work finishes (not necessarily at a head), or after ms, whichever is first. */
  async waitForWork(ms: number): Promise<void> {
    if (this.hasReady) return;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.wake = resolve;
      timer = setTimeout(resolve, ms);
    });
    clearTimeout(timer);
    this.wake = null;
  }

  /**
   * Forgets every input (after a rewind they are polled again). Work still running finishes into
   * nothing; what it paid for is in the response journal, so starting it again costs no call.
   */
  clear(): void {
    this.generation++;
    this.queues.clear();
    this.count = 0;
    this.wake?.();
  }
}

/** The key of an input's outcome in takeReady()'s map. */
export function outcomeKey(r: { topic: string; partition: number; offset: number }): string {
  return `${partitionKey(r.topic, r.partition)}\u0000${r.offset}`;
}

/**
 * A processor whose work is windowed: run() keeps `inFlight` inputs' work running across steps
 * (see ProcessorTask), and process(), for step() and the test driver, does a batch's work at once
 * and finishes it in order: the same outputs either way.
 */
export function windowed<R>(
  def: Omit<Processor, 'process' | 'window'> & { readonly window: WindowedWork<R> },
): Processor {
  const work = def.window as WindowedWork<unknown>;
  return {
    ...def,
    window: work,
    async process(batch, ctx) {
      const settled = await Promise.allSettled(batch.map((input) => work.start(input)));
      for (const [i, s] of settled.entries()) {
        const outcome: Outcome =
          s.status === 'fulfilled' ? { ok: true, value: s.value } : { ok: false, error: s.reason };
        await work.finish(batch[i]!, outcome, ctx);
      }
    },
  };
}
