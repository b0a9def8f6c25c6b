import { type Offset, type OutgoingRecord, type StateChange, stateKey } from './records.js';
import type { LogTask, LogTransaction } from './runtime/types.js';

/** Everything one step produced. */
export interface StepWrites {
  /** Writes to systems outside the log (ClickHouse...), idempotent by record id. */
  readonly sinkWrites: readonly (() => Promise<void>)[];
  readonly state: readonly StateChange[];
  readonly outputs: readonly OutgoingRecord[];
  /** The next offset to read per input partition, keyed by partitionKey(topic, partition). */
  readonly offsets: ReadonlyMap<string, Offset>;
}

/**
 * The one place exactly-once lives: one transaction of the log, holding one step or, under a
 * commit interval, several. The order matters:
 *  1. flush sinks      (each step) external writes land first; they are idempotent, so a crash
 *                      before the commit only means they are written again with the same ids
 *  2. write changelogs (each step) state changes join the transaction (a changelog topic, or the same file)
 *  3. produce          (each step) outputs join the transaction; a Kafka producer sends them at once
 *  4. commit offsets   (commit)    the inputs' next offsets join it, the producer is flushed and the
 *                                  transaction commits: all or nothing
 *  5. flush state      (commit)    the local store takes the changes only once they are committed
 * If 2, 3 or 4 fails the transaction is lost as a whole: every step in it is read again after a rewind.
 */
export class Checkpoint {
  /** The latest change per state key over the steps so far: what the next steps read. */
  readonly changes = new Map<string, StateChange>();
  private readonly offsets = new Map<string, Offset>();
  /** The log refused a write: the transaction can only be aborted. */
  broken = false;
  readonly begunAt = performance.now();

  private constructor(
    private readonly task: LogTask,
    private readonly tx: LogTransaction,
  ) {}

  static async begin(task: LogTask): Promise<Checkpoint> {
    return new Checkpoint(task, await task.begin());
  }

  /** Steps 1-3 for one step. A failing sink leaves the transaction whole; a failing log write does not. */
  async add(step: StepWrites): Promise<void> {
    for (const write of step.sinkWrites) await write();
    try {
      await this.tx.writeChangelogs(step.state);
      await this.tx.produce(step.outputs);
    } catch (e) {
      this.broken = true;
      throw e;
    }
    for (const c of step.state) this.changes.set(stateKey(c.store, c.key, c.partition), c);
    for (const [k, o] of step.offsets) this.offsets.set(k, o);
  }

  /** Steps 4-5. */
  async commit(): Promise<void> {
    try {
      await this.tx.commitOffsets(this.offsets);
      await this.tx.commit();
    } catch (e) {
      await this.abort();
      throw e;
    }
    await this.task.flushState([...this.changes.values()]);
  }

  async abort(): Promise<void> {
    this.broken = true;
    await this.tx.abort().catch(() => {});
  }
}
