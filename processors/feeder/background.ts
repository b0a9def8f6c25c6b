import type Database from 'better-sqlite3';
import type { Epochs } from './epochs.js';
import { PLAN_SLICE_MS, type Selections } from './planning.js';
import type { RenderedItems } from './rendered-items.js';
import type { BatchRow, RunRow, Statements } from './store.js';

// What the feeder does off the request path: cutting and rendering batches before their leases,
// planning next epochs and selecting the pool in slices, one slice per turn of the event loop, so
// that a request never waits for work that grows with the pool.

export class BackgroundWork {
  /** Runs a request touched since the last slice, and their ranks. */
  private readonly kicked = new Map<string, Set<number>>();
  private pending: NodeJS.Immediate | null = null;

  constructor(
    private readonly db: Database.Database,
    private readonly q: Statements,
    /** Batches each rank should have cut and rendered ahead of its leases. */
    private readonly readyBatches: number,
    private readonly parts: {
      epochs: Epochs;
      rendered: RenderedItems;
      selections: Selections;
      /** Whether the feeder holds a mix: without one there is nothing to prepare. */
      hasMix: () => boolean;
    },
  ) {}

  /** Keeps every run ready (the processor's timer calls it): see prepareRun. Returns the batches cut. */
  prepare(): number {
    if (!this.parts.hasMix()) return 0;
    let cut = 0;
    for (const { run } of this.q.runNames.all() as { run: string }[]) cut += this.prepareRun(run);
    return cut;
  }

  /**
   * Schedules prepareRun for the rank of a run a lease or release touched, after the response is
   * sent: the request never waits for cutting, rendering or planning, and the work is that rank's,
   * not every rank's (the processor's timer still keeps every rank ready).
   */
  kick(run: string, rank: number): void {
    const ranks = this.kicked.get(run) ?? new Set<number>();
    this.kicked.set(run, ranks.add(rank));
    this.schedule();
  }

  /** One slice of background work per turn of the event loop, while there is some. */
  schedule(): void {
    if (this.pending || !this.db.open) return;
    this.pending = setImmediate(() => {
      this.pending = null;
      if (!this.db.open || !this.parts.hasMix()) return;
      const kicked = [...this.kicked];
      this.kicked.clear();
      for (const [r, ranks] of kicked) this.prepareRun(r, ranks);
      const until = performance.now() + PLAN_SLICE_MS;
      const selecting = this.parts.selections.slice(until);
      if (this.parts.epochs.planSlice(until) || selecting) this.schedule();
    });
  }

  /** Stops the slice scheduled, before the file closes. */
  stop(): void {
    if (this.pending) clearImmediate(this.pending);
    this.pending = null;
  }

  /**
   * Keeps one run ready: re-plans an epoch whose mix version is old, cuts batches until each rank
   * has `readyBatches` waiting in its epoch (no more: the rest waits for acks), renders them, and
   * once the epoch is cut to its end plans the next one, so that no lease plans or renders.
   */
  private prepareRun(name: string, ranks?: Iterable<number>): number {
    const { epochs, rendered } = this.parts;
    const runNow = () => this.q.getRun.get(name) as RunRow;
    return this.db.transaction(() => {
      const run = runNow();
      let n = 0;
      for (const rank of ranks ?? Array.from({ length: run.world_size }, (_, r) => r)) {
        const epoch = epochs.rankEpoch(name, rank);
        // The run's epoch as it is now: an earlier rank of this loop may have opened the next one.
        if (epoch < runNow().epoch) continue;
        while ((this.q.readyForRank.get(name, rank, epoch) as { n: number }).n < this.readyBatches) {
          const before = runNow().cut;
          if (!epochs.cutFor(runNow(), rank, epoch)) break;
          n += runNow().cut - before;
        }
        for (const b of this.q.readyList.all(name, rank, epoch, this.readyBatches) as BatchRow[])
          rendered.renderAhead(b);
      }
      const now = runNow();
      if (now.epoch >= 0 && now.pos >= epochs.plan(now, now.epoch).length) epochs.planAhead(now);
      return n;
    })();
  }
}
