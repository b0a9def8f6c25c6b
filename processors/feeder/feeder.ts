import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { RewardRow } from '../../analytics/qa-store.js';
import {
  type AckRequest,
  type AckResponse,
  type ExtendRequest,
  type FeederConfig,
  FeederConfig as FeederConfigSchema,
  type FeederStatus,
  type ItemDifficulty,
  type ItemDifficultyPage,
  type LeaseRequest,
  type LeaseResponse,
  type ReleaseRequest,
  type ReleaseResponse,
  type RunStatus,
} from '../../schemas/feeder.js';
import type { MixState } from '../../schemas/mix-state.js';
import type { RolloutLease } from '../../schemas/rollout-batch.js';
import {
  bandOf,
  blended,
  choose,
  type DifficultyRow,
  type DifficultyStatements,
  difficultyStatements,
  emptyRow,
  groupKeys,
  type ItemMeta,
  type ItemView,
  isIssue,
  type Observation,
  observe,
  outside,
  passRate,
  prior,
  updated,
} from './difficulty.js';
import { epochOrder, epochOrderSteps, epochSeed, nextBatchSize, paddingOf, type Slot } from './order.js';
import { type AheadPlan, PLAN_SLICE_MS, planSteps, Selections } from './planning.js';
import { type PoolItem, rolloutRow } from './row.js';
import {
  AT_COPY,
  AT_INDEX,
  ackedSlots,
  type BatchRow,
  type BatchSlot,
  COPY_MARK,
  INDEX_MARK,
  prepareFile,
  type RunRow,
  type Statements,
  statements,
} from './store.js';

// Leases and acks, and the epochs they are cut from, over the feeder's own SQLite file (store.ts
// says why a file of its own). Every method below runs synchronously to its end: the event loop is
// the lock, so no two requests interleave.

/** A refused request: the HTTP status and the reason; nothing in the feeder changed. */
export class FeederError extends Error {
  constructor(
    readonly status: 400 | 404 | 409 | 413 | 503,
    readonly code: string,
    reason: string,
  ) {
    super(reason);
  }
}

export interface FeederOptions {
  /** Milliseconds since the epoch; tests move it. */
  readonly now?: () => number;
}

export class Feeder {
  readonly config: FeederConfig;
  private readonly db: Database.Database;
  private readonly now: () => number;
  private mix: MixState | null = null;
  /** The epoch order of each run's current epoch, read from the file once. */
  private readonly plans = new Map<string, { epoch: number; version: number; slots: Slot[] }>();
  /** The mix's selection over the pool, made in slices between requests (planning.ts). */
  private readonly selections: Selections;
  /** Rendered items (a JSON array) and their slots, of batches cut and not yet leased. */
  private readonly rendered = new Map<string, { items: string; slots: number[] }>();
  private readonly q: Statements;
  private readonly d: DifficultyStatements;
  /** Each selection's items grouped by their topics (band-pass replaces an item within its group). */
  private peerIndex: { of: unknown; key: Map<string, string>; peers: Map<string, string[]> } | null = null;
  /** Items' topics, article and grade (difficulty.ts ItemMeta): one entry per pool item at most. */
  private readonly metas = new Map<string, ItemMeta>();
  /** Each run's next epoch, planned ahead (or being planned) for the selection it was made of. */
  private readonly ahead = new Map<string, AheadPlan>();
  /** Runs a request touched since the last background slice, and that slice. */
  private readonly kicked = new Map<string, Set<number>>();
  private background: NodeJS.Immediate | null = null;

  private constructor(db: Database.Database, config: FeederConfig, opts: FeederOptions) {
    this.db = db;
    this.config = config;
    this.now = opts.now ?? Date.now;
    this.q = statements(db);
    this.d = difficultyStatements(db);
    const mix = this.q.getMeta.get('mix') as { value: string } | undefined;
    this.mix = mix ? (JSON.parse(mix.value) as MixState) : null;
    this.selections = new Selections(
      this.q,
      () => this.mix,
      () => this.schedule(),
    );
  }

  /** Opens (or creates) the feeder's file; ':memory:' for a throwaway one. */
  static open(path: string, config: Partial<FeederConfig> = {}, opts: FeederOptions = {}): Feeder {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    // NORMAL in WAL mode: a commit survives the process being killed (the OS has it); only a
    // power cut can lose the last transactions.
    db.pragma('synchronous = NORMAL');
    const parsed = FeederConfigSchema.parse(config);
    prepareFile(db, parsed);
    return new Feeder(db, parsed, opts);
  }

  close(): void {
    if (this.background) clearImmediate(this.background);
    this.background = null;
    this.db.close();
  }

  // ---- what the processor writes (idempotent) ------------------------------------------------

  /** Adds or replaces pool items (a replayed record rewrites the same row). */
  addItems(items: readonly PoolItem[]): void {
    this.db.transaction(() => {
      for (const it of items) {
        this.metas.delete(it.id);
        this.q.putItem.run(
          it.id,
          it.articleId,
          JSON.stringify(it.topics),
          it.source,
          it.published,
          JSON.stringify(it),
          this.rowOf(it),
        );
      }
    })();
    if (items.length && this.mix) {
      this.selections.poolChanged();
    }
  }

  /**
   * Takes QA withdrawn from the dataset out of the pool, now or when they come (a replayed
   * withdrawal changes nothing). Batches already cut keep them: a lease is what was handed out.
   */
  withdrawItems(ids: readonly string[]): void {
    let changed = 0;
    this.db.transaction(() => {
      for (const id of ids) changed += this.q.putWithdrawn.run(id).changes;
    })();
    if (changed && this.mix) this.selections.poolChanged();
  }

  /** Takes a mix version newer than the one held; an older or equal one is ignored. */
  setMix(mix: MixState): boolean {
    if (this.mix && mix.version <= this.mix.version) return false;
    this.q.putMeta.run('mix', JSON.stringify(mix));
    this.mix = mix;
    this.selections.reselect();
    return true;
  }

  get mixVersion(): number | null {
    return this.mix?.version ?? null;
  }

  // ---- the trainer API -----------------------------------------------------------------------

  lease(req: LeaseRequest): LeaseResponse {
    return JSON.parse(this.leaseRaw(req).json) as LeaseResponse;
  }

  /**
   * A lease as the JSON string the HTTP handler sends as it is: its items were rendered ahead,
   * when the batch was cut, and are not parsed again here.
   */
  leaseRaw(req: LeaseRequest): { json: string } {
    const leaseMs = Math.min(req.leaseMs ?? this.config.leaseMs, this.config.maxLeaseMs);
    const prefetch = req.prefetch ?? this.config.prefetchBatches;
    if (!this.mix)
      throw new FeederError(503, 'no-mix', 'no mix.state yet: the sampler has not published a mix');
    const json = this.db.transaction((): string => {
      let run = this.q.getRun.get(req.run) as RunRow | undefined;
      if (run && run.world_size !== req.worldSize) {
        throw new FeederError(
          409,
          'run-mismatch',
          `run "${req.run}" has worldSize ${run.world_size}; start a new run to change it`,
        );
      }
      if (!run) {
        const size = req.batchSize ?? this.config.batchSize;
        this.q.insertRun.run(req.run, req.worldSize, size, size, this.now());
        run = this.q.getRun.get(req.run) as RunRow;
      } else if (req.batchSize !== undefined && req.batchSize !== run.batch_size) {
        // Taken at the next epoch the run plans: the epoch being cut keeps one size.
        this.q.setBatchSize.run(req.batchSize, req.run);
        run.batch_size = req.batchSize;
      }
      const epoch = this.rankEpoch(req.run, req.rank);
      const now = this.now();
      let batch = this.q.nextForRank.get(req.run, req.rank, epoch, now) as BatchRow | undefined;
      if (!batch && run.epoch <= epoch) batch = this.cutFor(run, req.rank, epoch);
      if (batch) {
        // Bounded prefetch: a loader that fetches ahead may cross an epoch's end holding a few
        // batches of the epoch before; a rank that holds more has stopped acking.
        const held = this.q.heldBefore.get(req.run, req.rank, batch.epoch, now) as {
          n: number;
          first: number | null;
        };
        if (held.n > prefetch) {
          return JSON.stringify({
            status: 'wait',
            epoch: batch.epoch,
            retryAfterMs: Math.max(10, Math.min(1000, (held.first ?? now) - now)),
            reason: `rank ${req.rank} holds ${held.n} unacked batch(es) of epochs before ${batch.epoch} (prefetch ${prefetch}): ack or release them`,
          } satisfies LeaseResponse);
        }
        const leaseId = randomUUID();
        const deadline = now + leaseMs;
        const attempt = batch.attempts + 1;
        const acked = ackedSlots(batch);
        this.q.leaseBatch.run(leaseId, deadline, attempt, batch.id);
        this.q.outbox.run(batch.id, leaseId, deadline, attempt);
        const { items, slots } = this.itemsJson(batch, acked);
        if (attempt > 1) this.q.addRedelivered.run(slots.length, req.run, batch.epoch);
        const head = JSON.stringify(this.batchHead(batch, deadline, attempt));
        const leftOut = batch.left_out === '[]' ? '' : `,"leftOut":${batch.left_out}`;
        return `{"status":"leased","leaseId":"${leaseId}","slots":${JSON.stringify(slots)}${leftOut},"batch":${head.slice(0, -1)},"items":${items}}}`;
      }
      if (this.epochIsEmpty(run, epoch)) {
        return JSON.stringify({
          status: 'wait',
          epoch,
          retryAfterMs: 1000,
          reason: 'the mix selects no items yet',
        } satisfies LeaseResponse);
      }
      // No fresh batch of this epoch is left for the rank (it may still hold some: they are
      // acked, released or redelivered as usual); its next lease starts the next epoch.
      this.q.setRankEpoch.run(req.run, req.rank, epoch + 1);
      return JSON.stringify({ status: 'epoch-end', epoch } satisfies LeaseResponse);
    })();
    this.kick(req.run, req.rank);
    return { json };
  }

  /**
   * Acks slots of a held batch (all not yet acked, or the ones named), each with an optional
   * reward; the other slots stay leased under the same lease.
   */
  ack(req: AckRequest): AckResponse {
    return this.db.transaction((): AckResponse => {
      const batch = this.heldBatch(req);
      const slots = JSON.parse(batch.slots) as BatchSlot[];
      const acked = new Set(ackedSlots(batch));
      let target: number[];
      if (req.slots) {
        const seen = new Set<number>();
        req.slots.forEach((s, i) => {
          if (!Number.isInteger(s) || s < 0 || s >= slots.length)
            throw new FeederError(
              400,
              'bad-slot',
              `slots[${i}] = ${s} is outside batch "${batch.id}" (slots 0..${slots.length - 1})`,
            );
          if (seen.has(s)) throw new FeederError(400, 'bad-slot', `slot ${s} is listed twice`);
          seen.add(s);
        });
        const again = req.slots.filter((s) => acked.has(s));
        if (again.length)
          throw new FeederError(
            409,
            'slot-already-acked',
            `slot(s) ${again.join(', ')} of batch "${batch.id}" already acked`,
          );
        target = req.slots;
      } else {
        target = [...slots.keys()].filter((s) => !acked.has(s));
      }
      for (const [name, values] of [
        ['rewards', req.rewards],
        ['responseLengths', req.responseLengths],
      ] as const) {
        if (values && values.length !== target.length)
          throw new FeederError(
            400,
            'bad-length',
            `${name} has ${values.length} entries; the ack covers ${target.length} slot(s)`,
          );
      }
      // JSON cannot carry NaN or Infinity, but an in-process caller can.
      const bad = (req.rewards ?? []).findIndex((r) => r !== null && !Number.isFinite(r));
      if (bad >= 0)
        throw new FeederError(
          400,
          'bad-reward',
          `rewards[${bad}] = ${req.rewards![bad]}: a reward is a finite number (or null for none)`,
        );
      if (req.rollouts && req.rollouts.length !== target.length)
        throw new FeederError(
          400,
          'bad-length',
          `rollouts has ${req.rollouts.length} entries; the ack covers ${target.length} slot(s)`,
        );
      // Every slot's rollouts are checked before anything is written: a refused ack changes nothing.
      const observations = target.map((_, i): Observation | null => {
        const o = observe(req.rollouts?.[i], req.rewards?.[i], `rollouts[${i}]`);
        if (isIssue(o)) throw new FeederError(400, o.code, o.reason);
        return o;
      });
      for (const s of target) acked.add(s);
      const remaining = slots.length - acked.size;
      this.q.ackSlots.run({
        acked: JSON.stringify([...acked].sort((a, b) => a - b)),
        state: remaining === 0 ? 'acked' : 'leased',
        at: remaining === 0 ? this.now() : null,
        id: batch.id,
      });
      // A slot's reward is the mean of its rollouts when the ack sends only those.
      const rewards = target.map((_, i) => {
        const o = observations[i];
        return req.rewards?.[i] ?? (req.rollouts?.[i] && o ? o.rewardSum / o.count : null);
      });
      const rewarded = rewards.filter((r) => r !== null).length;
      this.q.addAcked.run(target.length, req.run);
      this.q.epochAcked.run(target.length, rewarded, req.run, batch.epoch);
      const step = req.step ?? batch.seq;
      this.q.setRunStep.run(step, req.run);
      // The groups' sums (the priors') once per key per ack: a batch's slots share their topics.
      const groups = new Map<string, { passes: number; rollouts: number }>();
      let [rollouts, flat, aside] = [0, 0, 0];
      observations.forEach((o, i) => {
        if (!o) return;
        if (this.observeItem(req.run, slots[target[i]!]![0], o, step, groups)) aside++;
        rollouts += o.count;
        if (o.flat) flat++;
      });
      for (const [key, g] of groups) this.d.addGroup.run(req.run, key, g.passes, g.rollouts);
      // The run's totals, kept as counters so /metrics and the dashboard read one row per run.
      if (rollouts) this.q.addDifficulty.run(rollouts, flat, aside, req.run);
      // One row per (run, item, step): copies of one item in one ack share their mean.
      const byItem = new Map<string, { rs: number[]; rollouts: number; passes: number; flat: number }>();
      rewards.forEach((r, i) => {
        if (r === null) return;
        const id = slots[target[i]!]![0];
        const o = req.rollouts?.[i] ? observations[i] : null;
        const at = byItem.get(id) ?? { rs: [], rollouts: 0, passes: 0, flat: 0 };
        at.rs.push(r);
        at.rollouts += o?.count ?? 0;
        at.passes += o?.passes ?? 0;
        at.flat += o?.flat ? 1 : 0;
        byItem.set(id, at);
      });
      const rows: RewardRow[] = [...byItem].map(([qaId, at]) => ({
        qaId,
        run: req.run,
        step,
        reward: at.rs.reduce((a, b) => a + b, 0) / at.rs.length,
        mixVersion: batch.mix_version,
        rollouts: at.rollouts,
        passes: at.passes,
        flatGroups: at.flat,
      }));
      if (rows.length) this.q.queueRewards.run(JSON.stringify(rows));
      return { acked: batch.id, items: target.length, rewards: rewarded, remaining };
    })();
  }

  /** Gives a held batch's unacked slots back untrained: the rank's next lease gets them first. */
  release(req: ReleaseRequest): ReleaseResponse {
    const batch = this.db.transaction((): BatchRow => {
      const held = this.heldBatch(req);
      this.q.release.run(held.id);
      return held;
    })();
    // Rendered again for its redelivery, after this response.
    this.kick(req.run, batch.rank);
    return {
      released: batch.id,
      items: (JSON.parse(batch.slots) as unknown[]).length - ackedSlots(batch).length,
    };
  }

  extend(req: ExtendRequest): { leaseDeadline: string } {
    return this.db.transaction(() => {
      const batch = this.heldBatch(req);
      const ms = Math.min(req.leaseMs ?? this.config.leaseMs, this.config.maxLeaseMs);
      const deadline = this.now() + ms;
      this.q.extend.run(deadline, batch.id);
      return { leaseDeadline: new Date(deadline).toISOString() };
    })();
  }

  runStatus(name: string): RunStatus {
    const run = this.q.getRun.get(name) as RunRow | undefined;
    if (!run)
      throw new FeederError(404, 'unknown-run', `no run "${name}" (a run starts with its first lease)`);
    const now = this.now();
    const counts = this.q.batchCounts.get(now, now, name) as {
      ready: number;
      leased: number;
      acked: number;
      redelivered: number;
    };
    const ranks = Array.from({ length: run.world_size }, (_, rank) => {
      const r = this.q.rankCounts.get(now, name, rank) as { leased: number; acked: number };
      return { rank, epoch: this.rankEpoch(name, rank), leased: r.leased ?? 0, acked: r.acked ?? 0 };
    });
    const epochs = (
      this.q.epochStats.all(name) as {
        epoch: number;
        batch_size: number;
        planned: number;
        acked: number;
        rewarded: number;
        redelivered: number;
      }[]
    ).map((e) => ({
      epoch: e.epoch,
      batchSize: e.batch_size,
      planned: e.planned,
      acked: e.acked,
      rewarded: e.rewarded,
      redelivered: e.redelivered,
    }));
    return {
      run: name,
      worldSize: run.world_size,
      batchSize: run.cut_size,
      epoch: run.epoch,
      mixVersion: run.mix_version,
      planned: run.planned,
      cutItems: run.base + run.pos,
      batches: {
        ready: counts.ready ?? 0,
        leased: counts.leased ?? 0,
        acked: counts.acked ?? 0,
        redelivered: counts.redelivered ?? 0,
      },
      ackedItems: run.acked_items,
      difficulty: { rollouts: run.rollouts, flatGroups: run.flat_groups, setAside: run.set_aside },
      ranks,
      epochs,
    };
  }

  /** The runs that have leased, by name (cheap: status() also walks the pool). */
  runNames(): string[] {
    return (this.q.runNames.all() as { run: string }[]).map((r) => r.run);
  }

  status(): FeederStatus {
    const runs = (this.q.runNames.all() as { run: string }[]).map((r) => r.run);
    return {
      mixVersion: this.mixVersion,
      pool: (this.q.poolSize.get() as { n: number }).n,
      selected: this.mix ? this.selections.selection().items.reduce((s, i) => s + i.copies, 0) : 0,
      runs,
    };
  }

  // ---- what is done off the request path -----------------------------------------------------

  /**
   * Keeps every run ready (the processor's timer calls it): see prepareRun. Returns the batches
   * cut.
   */
  prepare(): number {
    if (!this.mix) return 0;
    let cut = 0;
    for (const { run } of this.q.runNames.all() as { run: string }[]) cut += this.prepareRun(run);
    return cut;
  }

  /**
   * Keeps one run ready: re-plans an epoch whose mix version is old, cuts batches until each rank
   * has `readyBatches` waiting in its epoch (no more: the rest waits for acks), renders them, and
   * once the epoch is cut to its end plans the next one, so that no lease plans or renders.
   */
  private prepareRun(name: string, ranks?: Iterable<number>): number {
    return this.db.transaction(() => {
      const run = this.q.getRun.get(name) as RunRow;
      let n = 0;
      for (const rank of ranks ?? Array.from({ length: run.world_size }, (_, r) => r)) {
        const epoch = this.rankEpoch(name, rank);
        // The run's epoch as it is now: an earlier rank of this loop may have opened the next one.
        if (epoch < (this.q.getRun.get(name) as RunRow).epoch) continue;
        while ((this.q.readyForRank.get(name, rank, epoch) as { n: number }).n < this.config.readyBatches) {
          const before = (this.q.getRun.get(name) as RunRow).cut;
          if (!this.cutFor(this.q.getRun.get(name) as RunRow, rank, epoch)) break;
          n += (this.q.getRun.get(name) as RunRow).cut - before;
        }
        for (const b of this.q.readyList.all(name, rank, epoch, this.config.readyBatches) as BatchRow[]) {
          if (!this.rendered.has(b.id) && b.acked_slots === '[]')
            this.rendered.set(b.id, this.renderItems(b));
        }
      }
      const now = this.q.getRun.get(name) as RunRow;
      if (now.epoch >= 0 && now.pos >= this.plan(now, now.epoch).length) this.planAhead(now);
      return n;
    })();
  }

  /**
   * Starts planning the run's next epoch while the current one is still being leased: the order
   * and its stored form are made in steps by the background work (planSteps).
   */
  private planAhead(run: RunRow): void {
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
  private planSlice(until: number): boolean {
    let left = false;
    for (const plan of this.ahead.values()) {
      while (plan.steps && performance.now() < until) if (plan.steps.next().done) plan.steps = null;
      left ||= plan.steps !== null;
    }
    return left;
  }

  /**
   * Schedules prepareRun for the rank of a run a lease or release touched, after the response is
   * sent: the request never waits for cutting, rendering or planning, and the work is that rank's,
   * not every rank's (the processor's timer still keeps every rank ready).
   */
  private kick(run: string, rank: number): void {
    const ranks = this.kicked.get(run) ?? new Set<number>();
    this.kicked.set(run, ranks.add(rank));
    this.schedule();
  }

  /** One slice of background work per turn of the event loop, while there is some. */
  private schedule(): void {
    if (this.background || !this.db.open) return;
    this.background = setImmediate(() => {
      this.background = null;
      if (!this.db.open || !this.mix) return;
      const kicked = [...this.kicked];
      this.kicked.clear();
      for (const [r, ranks] of kicked) this.prepareRun(r, ranks);
      const until = performance.now() + PLAN_SLICE_MS;
      const selecting = this.selections.slice(until);
      if (this.planSlice(until) || selecting) this.schedule();
    });
  }

  /** Leases not yet published on rollout.batches, after `afterSeq`: each batch as cut, items by qa id. */
  leasesAfter(afterSeq: number, limit = 256): { seq: number; lease: RolloutLease }[] {
    const rows = this.q.outboxAfter.all(afterSeq, limit) as {
      seq: number;
      batch_id: string;
      deadline: number;
      attempt: number;
    }[];
    return rows.map((r) => {
      const b = this.q.getBatch.get(r.batch_id) as BatchRow;
      const head = this.batchHead(b, r.deadline, r.attempt);
      // The batch as cut, every slot: the record says which items went to whom, and when.
      const items = (JSON.parse(b.slots) as BatchSlot[]).map(([qaId, copy, index]) => ({
        qaId,
        copy,
        index,
      }));
      return { seq: r.seq, lease: { ...head, items } };
    });
  }

  /** Forgets published leases up to seq (the processor committed them). */
  dropLeasesThrough(seq: number): void {
    this.q.dropOutbox.run(seq);
  }

  /** Reward rows acked and not yet written to ClickHouse. */
  pendingRewards(limit = 1000): { through: number; rows: RewardRow[] } {
    const rows = this.q.rewardsQueued.all(limit) as { seq: number; rows: string }[];
    return {
      through: rows.at(-1)?.seq ?? 0,
      rows: rows.flatMap((r) => JSON.parse(r.rows) as RewardRow[]),
    };
  }

  dropRewardsThrough(seq: number): void {
    this.q.dropRewards.run(seq);
  }

  // ---- difficulty (difficulty.ts) --------------------------------------------------------------

  /** One item's record in a run: 404 when the run or the item's record is unknown. */
  itemDifficulty(run: string, id: string): ItemDifficulty {
    const r = this.q.getRun.get(run) as RunRow | undefined;
    if (!r) throw new FeederError(404, 'unknown-run', `no run "${run}"`);
    const row = this.d.get.get(run, id) as DifficultyRow | undefined;
    if (!row && !this.q.getItem.get(id))
      throw new FeederError(404, 'unknown-item', `no item "${id}" in the pool`);
    return this.describe(row ?? emptyRow(run, id), r.step);
  }

  /** A page of a run's item records by id, after `after`. */
  itemDifficulties(run: string, after = '', limit = 100): ItemDifficultyPage {
    const r = this.q.getRun.get(run) as RunRow | undefined;
    if (!r) throw new FeederError(404, 'unknown-run', `no run "${run}"`);
    const rows = this.d.list.all(run, after, limit) as DifficultyRow[];
    return {
      run,
      step: r.step,
      items: rows.map((row) => this.describe(row, r.step)),
      next: rows.length === limit ? rows.at(-1)!.id : null,
    };
  }

  /** Per run: times items were set aside, flat groups acked, rollouts acked (for /metrics). */
  difficultyTotals(): { run: string; setAside: number; flat: number; rollouts: number }[] {
    return this.q.difficultyTotals.all() as {
      run: string;
      setAside: number;
      flat: number;
      rollouts: number;
    }[];
  }

  private describe(row: DifficultyRow, runStep: number): ItemDifficulty {
    const meta = this.metaOf(row.id);
    const w = this.config.difficulty.priorWeight;
    const p = meta ? this.priorOf(row.run, meta) : 0.5;
    return {
      run: row.run,
      id: row.id,
      topics: meta ? [...meta.topics] : [],
      rollouts: row.rollouts,
      passes: row.passes,
      meanReward: row.rollouts ? row.reward_sum / row.rollouts : null,
      acks: row.acks,
      step: row.step,
      passRate: passRate(row),
      prior: p,
      rate: blended(row, p, w),
      flatGroups: row.flat,
      setAside: row.set_aside,
      asideUntil: row.aside_until,
      asideReason: row.aside_reason as ItemDifficulty['asideReason'],
      aside: row.aside_until !== null && row.aside_until > runStep,
    };
  }

  /** An item's topics, article and grade, read from the file once (the cache holds the pool). */
  private metaOf(id: string): ItemMeta | null {
    const held = this.metas.get(id);
    if (held) return held;
    const m = this.d.itemMeta.get(id) as
      | { topics: string; article_id: string; grade: number | null }
      | undefined;
    if (!m) return null;
    const meta = { topics: JSON.parse(m.topics) as string[], articleId: m.article_id, grade: m.grade };
    this.metas.set(id, meta);
    return meta;
  }

  private priorOf(run: string, meta: ItemMeta): number {
    return prior((key) => {
      if (key.startsWith('a\u0000')) {
        const a = this.d.articleSums.get(run, meta.articleId) as { passes: number; rollouts: number };
        return a.rollouts > 0 ? a : undefined;
      }
      return this.d.getGroup.get(run, key) as { passes: number; rollouts: number } | undefined;
    }, meta);
  }

  /**
   * One acked slot's observation into its item's record and its groups' (the prior's), and the
   * run's band-pass decision: set aside until `cooldownSteps` after this step, or live. Runs inside
   * the ack's transaction.
   */
  private observeItem(
    run: string,
    id: string,
    obs: Observation,
    step: number,
    groups: Map<string, { passes: number; rollouts: number }>,
  ): boolean {
    const cfg = this.config.difficulty;
    const before = (this.d.get.get(run, id) as DifficultyRow | undefined) ?? emptyRow(run, id);
    const row = updated(before, obs, step, cfg.halfLifeSteps);
    const meta = this.metaOf(id);
    const band = bandOf(cfg, run);
    row.aside_until = null;
    row.aside_reason = null;
    if (band) {
      const w = cfg.priorWeight;
      const rate = blended(row, meta && w > 0 ? this.priorOf(run, meta) : 0.5, w);
      const why = row.rollouts + w >= band.minRollouts ? outside(rate, band) : null;
      if (why) {
        row.aside_until = step + band.cooldownSteps;
        row.aside_reason = why;
        row.set_aside++;
      }
    }
    this.d.put.run(row);
    if (meta) {
      const keys = groupKeys(meta);
      for (const key of [...keys.topics, ...keys.grades]) {
        const g = groups.get(key) ?? { passes: 0, rollouts: 0 };
        g.passes += obs.passes;
        g.rollouts += obs.count;
        groups.set(key, g);
      }
    }
    return row.aside_until !== null;
  }

  /** The selection's items grouped by their exact topic set, made once per selection. */
  private peers(): { key: Map<string, string>; peers: Map<string, string[]> } {
    const items = this.selections.selection().items;
    if (this.peerIndex?.of === items) return this.peerIndex;
    const key = new Map<string, string>();
    const peers = new Map<string, string[]>();
    for (const it of items) {
      const k = [...it.topics].sort().join('\u0000');
      key.set(it.id, k);
      const list = peers.get(k);
      if (list) list.push(it.id);
      else peers.set(k, [it.id]);
    }
    this.peerIndex = { of: items, key, peers };
    return this.peerIndex;
  }

  /**
   * The slots a batch serves of its planned ones: as planned without band-pass or a target; else
   * difficulty.ts's choice, which keeps each slot's topics.
   */
  private chooseFor(run: RunRow, batchId: string, planned: Slot[]): { slots: Slot[]; leftOut: unknown[] } {
    const cfg = this.config.difficulty;
    const band = bandOf(cfg, run.run);
    if (!band && cfg.target === null) return { slots: planned, leftOut: [] };
    const index = this.peers();
    const w = cfg.priorWeight;
    const views = new Map<string, ItemView>();
    const view = (id: string): ItemView => {
      let v = views.get(id);
      if (v) return v;
      const row = this.d.get.get(run.run, id) as DifficultyRow | undefined;
      const needPrior = w > 0 || (cfg.target !== null && !row);
      const meta = needPrior ? this.metaOf(id) : null;
      const p = meta ? this.priorOf(run.run, meta) : 0.5;
      const rate = row ? blended(row, p, w) : p;
      let aside: ItemView['aside'] = null;
      if (band && row?.aside_until != null && row.aside_until > run.step)
        aside = row.aside_reason as ItemView['aside'];
      // An item no ack has reached is set aside on its prior alone when the prior counts enough.
      else if (band && !row && w >= band.minRollouts) aside = outside(p, band);
      v = { rollouts: row?.rollouts ?? 0, rate, aside };
      views.set(id, v);
      return v;
    };
    return choose({
      batchId,
      planned,
      band,
      target: cfg.target,
      targetProbe: cfg.targetProbe,
      view,
      peers: (id) => index.peers.get(index.key.get(id) ?? '') ?? [],
    });
  }

  // ---- helpers -------------------------------------------------------------------------------

  /**
   * The selection plans read: the one made last, while a newer mix version's or pool's is made in
   * slices (selectSlice); made here in one piece only when none was made yet (the first lease).
   */
  /** Resolves once the selection of the newest mix over the pool as it is has been made. */
  selectionMade(): Promise<void> {
    return this.selections.made();
  }

  private rankEpoch(run: string, rank: number): number {
    return (this.q.getRankEpoch.get(run, rank) as { epoch: number } | undefined)?.epoch ?? 0;
  }

  /** The plan of the run's current epoch, made (or re-made for a new mix version) when needed. */
  private plan(run: RunRow, epoch: number): Slot[] {
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

  private epochIsEmpty(run: RunRow, epoch: number): boolean {
    if (run.epoch > epoch) return false;
    const cutInEpoch = (this.q.batchesOfEpoch.all(run.run, epoch) as unknown[]).length;
    return cutInEpoch === 0 && this.plan(run, epoch).length === 0;
  }

  /** Cuts batches in order until one is for `rank`; null when the epoch has no more. */
  private cutFor(run: RunRow, rank: number, epoch: number): BatchRow | undefined {
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
      const { slots: take, leftOut } = this.chooseFor(run, id, planned);
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

  private heldBatch(req: { run: string; batchId: string; leaseId: string; rank?: number }): BatchRow {
    if (!this.q.getRun.get(req.run)) throw new FeederError(404, 'unknown-run', `no run "${req.run}"`);
    const batch = this.q.getBatch.get(req.batchId) as BatchRow | undefined;
    if (!batch || batch.run !== req.run)
      throw new FeederError(404, 'unknown-batch', `run "${req.run}" has no batch "${req.batchId}"`);
    if (req.rank !== undefined && req.rank !== batch.rank)
      throw new FeederError(
        409,
        'other-rank',
        `batch "${batch.id}" belongs to rank ${batch.rank}, not rank ${req.rank}`,
      );
    if (batch.state === 'acked')
      throw new FeederError(409, 'already-acked', `batch "${batch.id}" is already acked`);
    if (batch.lease_id !== req.leaseId)
      throw new FeederError(
        409,
        'not-leased',
        `lease "${req.leaseId}" is not the lease of batch "${batch.id}": it was never made, was released, or was replaced`,
      );
    if (batch.state !== 'leased' || (batch.deadline ?? 0) < this.now())
      throw new FeederError(
        409,
        'lease-expired',
        `the lease of batch "${batch.id}" expired at ${new Date(batch.deadline ?? 0).toISOString()}`,
      );
    return batch;
  }

  /** A lease's batch without its items: what the lease answer and the lease record share. */
  private batchHead(b: BatchRow, deadline: number, attempt: number): Omit<RolloutLease, 'items'> {
    return {
      id: b.id,
      run: b.run,
      mixVersion: b.mix_version,
      rank: b.rank,
      epoch: b.epoch,
      index: b.idx,
      attempt,
      leaseDeadline: new Date(deadline).toISOString(),
    };
  }

  /**
   * The items of a delivery as JSON with their slots: the slots not yet acked, rendered ahead
   * (by the background work) for a batch none of whose slots is acked.
   */
  private itemsJson(b: BatchRow, acked: readonly number[]): { items: string; slots: number[] } {
    const cached = this.rendered.get(b.id);
    this.rendered.delete(b.id);
    if (acked.length === 0 && cached) return cached;
    return this.renderItems(b, acked);
  }

  private renderItems(b: BatchRow, acked: readonly number[] = []): { items: string; slots: number[] } {
    const skip = new Set(acked);
    const rows: string[] = [];
    const slots: number[] = [];
    (JSON.parse(b.slots) as BatchSlot[]).forEach(([id, copy, index], slot) => {
      if (skip.has(slot)) return;
      const row = (this.q.getRow.get(id) as { row: string | null }).row ?? this.storeRow(id);
      rows.push(row.replace(AT_INDEX, `"index":${index}`).replace(AT_COPY, `"copy":${copy}`));
      slots.push(slot);
    });
    return { items: `[${rows.join(',')}]`, slots };
  }

  /** The row of an item whose stored row was forgotten (other settings), stored again. */
  private storeRow(id: string): string {
    const row = this.rowOf(JSON.parse((this.q.getItem.get(id) as { body: string }).body) as PoolItem);
    this.q.putRow.run(row, id);
    return row;
  }

  /**
   * An item's row as JSON with placeholders for its position and copy: made once, when the item
   * arrives, so that a batch is put together from strings (rendering each row at each epoch was
   * most of a lease's cost).
   */
  private rowOf(item: PoolItem): string {
    return JSON.stringify(
      rolloutRow(item, this.config, { index: INDEX_MARK, split: 'train', copy: COPY_MARK }),
    );
  }
}

/** The slots of a batch acked so far. */
