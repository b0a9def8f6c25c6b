import type { DifficultyRecords } from './difficulty-records.js';
import { epochOrder, epochOrderSteps, epochSeed, nextBatchSize, paddingOf, type Slot } from './order.js';
import { type AheadPlan, planSteps, type Selections } from './planning.js';
import type { BatchRow, BatchSlot, RunRow, Statements } from './store.js';

// A run's epochs: each planned (its order of the selection's slots, padded to whole rounds of
// ranks), re-planned for a new mix version, planned ahead while the one before is leased, and cut
// into batches in order (with band-pass's choice of the slots each serves). Runs inside the
// caller's transaction.

export class Epochs {
  /** The epoch order of each run's current epoch, read from the file once. */
  private readonly plans = new Map<string, { epoch: number; version: number; slots: Slot[] }>();
  /** Each run's next epoch, planned ahead (or being planned) for the selection it was made of. */
  private readonly ahead = new Map<string, AheadPlan>();

  constructor(
    private readonly q: Statements,
    private readonly selections: Selections,
    private readonly records: DifficultyRecords,
    /** Asks for background turns, where planSlice is called. */
    private readonly schedule: () => void,
  ) {}

  /** The epoch a rank leases from. */
  rankEpoch(run: string, rank: number): number {
    return (this.q.getRankEpoch.get(run, rank) as { epoch: number } | undefined)?.epoch ?? 0;
  }

  /** The plan of the run's current epoch, made (or re-made for a new mix version) when needed. */
  plan(run: RunRow, epoch: number): Slot[] {
    const mix = this.selections.planMix;
    const cached = this.plans.get(run.run);
    if (run.epoch === epoch && run.mix_version === mix.version) {
      if (cached?.epoch === epoch && cached.version === mix.version) return cached.slots;
      const stored = this.q.getPlan.get(run.run) as { plan: string } | undefined;
      if (stored) {
        const slots = (JSON.parse(stored.plan) as [string, number][]).map(([id, copy]) => ({ id, copy }));
        this.plans.set(run.run, { epoch, version: mix.version, slots });
        return slots;
      }
    }
    const ahead = this.ahead.get(run.run);
    this.ahead.delete(run.run);
    const selection = this.selections.selection().items;
    const planned =
      run.epoch !== epoch &&
      ahead?.epoch === epoch &&
      ahead.version === mix.version &&
      ahead.selection === selection
        ? ahead
        : null;
    // A plan ahead not finished yet is finished here (the lease waits for what is left of it).
    while (planned?.steps) if (planned.steps.next().done) planned.steps = null;
    let order = planned?.slots ?? epochOrder(selection, epochSeed(mix.seed, run.run, epoch));
    let json = planned?.json ?? null;
    // The epoch's slots cut so far, in order: the start of the epoch a padding repeats.
    const cut: Slot[] = [];
    if (run.epoch === epoch) {
      // A new mix version within the epoch: what it selects, less what this epoch already cut
      // (distinct slots: a padding's repeat is no further copy).
      for (const b of this.q.batchesOfEpoch.all(run.run, epoch) as { slots: string }[]) {
        for (const [id, copy] of JSON.parse(b.slots) as BatchSlot[]) cut.push({ id, copy });
      }
      const cutCopies = new Map<string, Set<number>>();
      for (const s of cut) cutCopies.set(s.id, (cutCopies.get(s.id) ?? new Set()).add(s.copy));
      order = order.filter((s) => s.copy >= (cutCopies.get(s.id)?.size ?? 0));
      json = null;
    }
    // Whole rounds of worldSize batches (see nextBatchSize): the epoch's first slots again.
    const padding = paddingOf(
      order.length,
      run.epoch === epoch ? run.next_index : 0,
      run.world_size,
      run.epoch === epoch ? run.cut_size : run.batch_size,
    );
    if (padding > 0) {
      const start = [...cut.slice(0, padding), ...order.slice(0, padding)];
      const repeats = Array.from({ length: padding }, (_, i) => start[i % start.length]!);
      const tail = JSON.stringify(repeats.map((s) => [s.id, s.copy]));
      json = json === null ? null : `${json.slice(0, -1)}${order.length ? ',' : ''}${tail.slice(1)}`;
      order = order.concat(repeats);
    }
    if (run.epoch === epoch) {
      this.q.replan.run({ version: mix.version, left: order.length, run: run.run });
      this.q.epochPlanned.run({ run: run.run, epoch });
    } else {
      this.q.newEpoch.run(epoch, mix.version, order.length, run.run);
      this.q.insertEpoch.run({ run: run.run, epoch });
    }
    this.q.putPlan.run(run.run, json ?? JSON.stringify(order.map((s) => [s.id, s.copy])));
    this.plans.set(run.run, { epoch, version: mix.version, slots: order });
    Object.assign(run, this.q.getRun.get(run.run));
    return order;
  }

  /** True when the epoch has nothing to cut: no batch cut in it and an empty plan. */
  isEmpty(run: RunRow, epoch: number): boolean {
    if (run.epoch > epoch) return false;
    const cutInEpoch = (this.q.batchesOfEpoch.all(run.run, epoch) as unknown[]).length;
    return cutInEpoch === 0 && this.plan(run, epoch).length === 0;
  }

  /** Cuts batches in order until one is for `rank`; null when the epoch has no more. */
  cutFor(run: RunRow, rank: number, epoch: number): BatchRow | undefined {
    // An epoch the run has left is never planned again (that would restart its batch numbers).
    if (run.epoch > epoch) return undefined;
    const slots = this.plan(run, epoch);
    let pos = run.pos;
    let index = run.next_index;
    let seq = run.cut;
    let found: BatchRow | undefined;
    while (!found && pos < slots.length) {
      const size = nextBatchSize(slots.length - pos, index, run.world_size, run.cut_size);
      const planned = slots.slice(pos, pos + size);
      const id = `${run.run}/e${epoch}/b${index}`;
      const { slots: take, leftOut, servedAside } = this.records.chooseFor(run, id, planned);
      if (servedAside) this.q.addServedAside.run(servedAside, run.run);
      const batchSlots: BatchSlot[] = take.map((s, i) => [s.id, s.copy, run.base + pos + i]);
      const batchRank = index % run.world_size;
      this.q.insertBatch.run(
        id,
        run.run,
        epoch,
        index,
        batchRank,
        seq,
        run.mix_version,
        JSON.stringify(batchSlots),
        JSON.stringify(leftOut),
      );
      if (batchRank === rank) found = this.q.getBatch.get(id) as BatchRow;
      pos += planned.length;
      index++;
      seq++;
    }
    this.q.advance.run(pos, index, seq, run.run);
    Object.assign(run, { pos, next_index: index, cut: seq });
    return found;
  }

  /**
   * Starts planning the run's next epoch while the current one is still being leased: the order
   * and its stored form are made in steps by the background work (planSteps).
   */
  planAhead(run: RunRow): void {
    const epoch = run.epoch + 1;
    const { mix, items: selection } = this.selections.selection();
    const version = mix.version;
    const held = this.ahead.get(run.run);
    if (held?.epoch === epoch && held.version === version && held.selection === selection) return;
    const plan: AheadPlan = { epoch, version, selection, slots: null, json: null, steps: null };
    plan.steps = planSteps(plan, epochOrderSteps(selection, epochSeed(mix.seed, run.run, epoch)));
    this.ahead.set(run.run, plan);
    this.schedule();
  }

  /** Advances plans ahead until `until` (performance.now()); true while some are unfinished. */
  planSlice(until: number): boolean {
    let left = false;
    for (const plan of this.ahead.values()) {
      while (plan.steps && performance.now() < until) if (plan.steps.next().done) plan.steps = null;
      left ||= plan.steps !== null;
    }
    return left;
  }
}
