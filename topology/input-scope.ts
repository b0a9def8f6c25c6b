import { AsyncLocalStorage } from 'node:async_hooks';
import type { OutgoingRecord } from './records.js';

/**
 * What an input's work did outside its step that must settle in the step that finishes it: records
 * that join that step's transaction, and what to do once it has committed. The work (an LLM call,
 * say) runs before the step, concurrently with others, and finds its input's scope through
 * inputScope(). The response journal settles each reply an input used here: the reply's tombstone
 * commits with the step that used it, after which nothing but a deliberate replay can need it.
 */
export class InputScope {
  private readonly records = new Map<string, OutgoingRecord>();
  private readonly onCommit = new Map<string, () => void>();

  /** The input's partition (its step's scope), or GLOBAL for a processor with one store. */
  constructor(readonly partition: number) {}

  /** Adds `record` to the step that finishes this input, once per `id`; `committed` runs after that step commits. */
  settleWith(id: string, record: OutgoingRecord, committed?: () => void): void {
    this.records.set(id, record);
    if (committed) this.onCommit.set(id, committed);
  }

  /** Whether nothing needs settling (a callback comes only with its record). */
  get empty(): boolean {
    return this.records.size === 0;
  }

  /** What settles this input: records for its step's transaction, callbacks for after its commit. */
  settlement(): { records: OutgoingRecord[]; committed: (() => void)[] } {
    return { records: [...this.records.values()], committed: [...this.onCommit.values()] };
  }
}

const current = new AsyncLocalStorage<InputScope>();

/** The scope of the input whose work is running, if any. */
export function inputScope(): InputScope | undefined {
  return current.getStore();
}

/** Runs fn (and everything it awaits) in `scope`. */
export function inScope<T>(scope: InputScope, fn: () => T): T {
  return current.run(scope, fn);
}
