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
  type FeederConfigInput,
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
import { ackObservations, ackRewards, ackTarget, rewardRows } from './ack.js';
import { BackgroundWork } from './background.js';
import { DifficultyRecords } from './difficulty-records.js';
import { Epochs } from './epochs.js';
import { FeederError } from './feeder-error.js';
import { Selections } from './planning.js';
import { RenderedItems } from './rendered-items.js';
import type { PoolItem } from './row.js';
import {
  ackedSlots,
  type BatchRow,
  type BatchSlot,
  prepareFile,
  type RunRow,
  type Statements,
  statements,
} from './store.js';

// Leases and acks over the feeder's own SQLite file (store.ts says why a file of its own); the
// epochs they are cut from (epochs.ts), the items' difficulty (difficulty-records.ts), rendering
// (rendered-items.ts) and the work done between requests (background.ts) are parts it holds.
// Every method below runs synchronously to its end: the event loop is the lock, so no two requests
// interleave.

/** A run's difficulty counters, kept in the feeder's file as acks and cuts happen. */
export interface RunDifficultyTotals {
  run: string;
  /** Times band-pass set an item aside. */
  setAside: number;
  /** Flat groups acked. */
  flat: number;
  /** Rollouts acked. */
  rollouts: number;
  /** Set-aside items cut into a batch for lack of a live item of their topics. */
  servedAside: number;
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
  private readonly q: Statements;
  /** The mix's selection over the pool, made in slices between requests (planning.ts). */
  private readonly selections: Selections;
  private readonly records: DifficultyRecords;
  private readonly epochs: Epochs;
  private readonly rendered: RenderedItems;
  private readonly background: BackgroundWork;

  private constructor(db: Database.Database, config: FeederConfig, opts: FeederOptions) {
    this.db = db;
    this.config = config;
    this.now = opts.now ?? Date.now;
    this.q = statements(db);
    const mix = this.q.getMeta.get('mix') as { value: string } | undefined;
    this.mix = mix ? (JSON.parse(mix.value) as MixState) : null;
    const schedule = () => this.background.schedule();
    this.selections = new Selections(this.q, () => this.mix, schedule);
    this.records = new DifficultyRecords(db, config.difficulty, this.selections);
    this.epochs = new Epochs(this.q, this.selections, this.records, schedule);
    this.rendered = new RenderedItems(this.q, config);
    this.background = new BackgroundWork(db, this.q, config.readyBatches, {
      epochs: this.epochs,
      rendered: this.rendered,
      selections: this.selections,
      hasMix: () => this.mix !== null,
    });
  }

  /** Opens (or creates) the feeder's file; ':memory:' for a throwaway one. */
  static open(path: string, config: FeederConfigInput = {}, opts: FeederOptions = {}): Feeder {
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
    this.background.stop();
    this.db.close();
  }

  // ---- what the processor writes (idempotent) ------------------------------------------------

  /** Adds or replaces pool items (a replayed record rewrites the same row). */
  addItems(items: readonly PoolItem[]): void {
    this.db.transaction(() => {
      for (const it of items) {
        this.records.forget(it.id);
        this.q.putItem.run(
          it.id,
          it.articleId,
          JSON.stringify(it.topics),
          it.source,
          it.published,
          JSON.stringify(it),
          this.rendered.rowOf(it),
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
      const epoch = this.epochs.rankEpoch(req.run, req.rank);
      const now = this.now();
      let batch = this.q.nextForRank.get(req.run, req.rank, epoch, now) as BatchRow | undefined;
      if (!batch && run.epoch <= epoch) batch = this.epochs.cutFor(run, req.rank, epoch);
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
        const { items, slots } = this.rendered.take(batch, acked);
        if (attempt > 1) this.q.addRedelivered.run(slots.length, req.run, batch.epoch);
        const head = JSON.stringify(this.batchHead(batch, deadline, attempt));
        const leftOut = batch.left_out === '[]' ? '' : `,"leftOut":${batch.left_out}`;
        return `{"status":"leased","leaseId":"${leaseId}","slots":${JSON.stringify(slots)}${leftOut},"batch":${head.slice(0, -1)},"items":${items}}}`;
      }
      if (this.epochs.isEmpty(run, epoch)) {
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
    this.background.kick(req.run, req.rank);
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
      const target = ackTarget(req, batch.id, slots.length, acked);
      const observations = ackObservations(req, target.length);
      for (const s of target) acked.add(s);
      const remaining = slots.length - acked.size;
      this.q.ackSlots.run({
        acked: JSON.stringify([...acked].sort((a, b) => a - b)),
        state: remaining === 0 ? 'acked' : 'leased',
        at: remaining === 0 ? this.now() : null,
        id: batch.id,
      });
      const rewards = ackRewards(req, observations);
      const rewarded = rewards.filter((r) => r !== null).length;
      this.q.addAcked.run(target.length, req.run);
      this.q.epochAcked.run(target.length, rewarded, req.run, batch.epoch);
      const step = req.step ?? batch.seq;
      this.q.setRunStep.run(step, req.run);
      const observed = observations.flatMap((obs, i) => (obs ? [{ id: slots[target[i]!]![0], obs }] : []));
      const aside = this.records.observeAll(req.run, step, observed);
      const rollouts = observed.reduce((n, o) => n + o.obs.count, 0);
      const flat = observed.filter((o) => o.obs.flat).length;
      // The run's totals, kept as counters so /metrics and the dashboard read one row per run.
      if (rollouts) this.q.addDifficulty.run(rollouts, flat, aside, req.run);
      const rows = rewardRows(
        req,
        { step, mixVersion: batch.mix_version, slots, target },
        rewards,
        observations,
      );
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
    this.background.kick(req.run, batch.rank);
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
      return { rank, epoch: this.epochs.rankEpoch(name, rank), leased: r.leased ?? 0, acked: r.acked ?? 0 };
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
      difficulty: {
        rollouts: run.rollouts,
        flatGroups: run.flat_groups,
        setAside: run.set_aside,
        servedAside: run.served_aside,
      },
      ranks,
      epochs,
    };
  }

  /** The runs that have leased, by name (cheap: status() also walks the pool). */
  runNames(): string[] {
    return (this.q.runNames.all() as { run: string }[]).map((r) => r.run);
  }

  status(): FeederStatus {
    return {
      mixVersion: this.mixVersion,
      pool: (this.q.poolSize.get() as { n: number }).n,
      selected: this.mix ? this.selections.selection().items.reduce((s, i) => s + i.copies, 0) : 0,
      runs: this.runNames(),
    };
  }

  /** Keeps every run ready (the processor's timer calls it); returns the batches cut. */
  prepare(): number {
    return this.background.prepare();
  }

  /** Resolves once the selection of the newest mix over the pool as it is has been made. */
  selectionMade(): Promise<void> {
    return this.selections.made();
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

  // ---- difficulty (difficulty-records.ts) ------------------------------------------------------

  /** One item's record in a run: 404 when the run or the item's record is unknown. */
  itemDifficulty(run: string, id: string): ItemDifficulty {
    const r = this.runOf(run);
    if (!this.records.row(run, id) && !this.q.getItem.get(id))
      throw new FeederError(404, 'unknown-item', `no item "${id}" in the pool`);
    return this.records.item(run, id, r.step);
  }

  /** A page of a run's item records by id, after `after`. */
  itemDifficulties(run: string, after = '', limit = 100): ItemDifficultyPage {
    return this.records.page(run, this.runOf(run).step, after, limit);
  }

  /** Per run: the difficulty counters (for /metrics). */
  difficultyTotals(): RunDifficultyTotals[] {
    return this.q.difficultyTotals.all() as RunDifficultyTotals[];
  }

  // ---- helpers -------------------------------------------------------------------------------

  private runOf(run: string): RunRow {
    const r = this.q.getRun.get(run) as RunRow | undefined;
    if (!r) throw new FeederError(404, 'unknown-run', `no run "${run}"`);
    return r;
  }

  private heldBatch(req: { run: string; batchId: string; leaseId: string; rank?: number }): BatchRow {
    this.runOf(req.run);
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
}
