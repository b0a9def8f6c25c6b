import type { OutgoingRecord, StateChange } from './records.js';
import type { LogTask } from './runtime/types.js';

/** Everything one step produced, made durable together by checkpoint(). */
export interface StepWrites {
  /** Writes to systems outside the log (ClickHouse...), idempotent by record id. */
  readonly sinkWrites: readonly (() => Promise<void>)[];
  readonly state: readonly StateChange[];
  readonly outputs: readonly OutgoingRecord[];
  readonly offsets: ReadonlyMap<string, { topic: string; partition: number; offset: number }>;
}

/**
 * The one place exactly-once lives. The order matters:
 *  1. flush sinks      external writes land first; they are idempotent, so a crash before the
 *                      commit only means they are written again with the same ids
 *  2. write changelogs state changes join the transaction (a changelog topic, or the same file)
 *  3. flush producer   outputs join the transaction
 *  4. commit offsets   the inputs' next offsets join it, then the transaction commits: all or nothing
 *  5. flush state      the local store takes the changes only once they are committed
 */
export async function checkpoint(task: LogTask, writes: StepWrites): Promise<void> {
  for (const write of writes.sinkWrites) await write();
  const tx = await task.begin();
  try {
    await tx.writeChangelogs(writes.state);
    await tx.produce(writes.outputs);
    await tx.commitOffsets(writes.offsets);
    await tx.commit();
  } catch (e) {
    await tx.abort().catch(() => {});
    throw e;
  }
  await task.flushState(writes.state);
}
