import type { Analytics } from '../../analytics/clickhouse.js';
import { recordRewards } from '../../analytics/qa-store.js';
import type { QaWithdrawal } from '../../schemas/dedup.js';
import type { MixState } from '../../schemas/mix-state.js';
import type { ClassifiedQa } from '../../schemas/qa.js';
import type { InputRecord, Processor, StepContext } from '../../topology/processor.js';
import type { Feeder } from './feeder.js';
import { type PoolItem, poolItem } from './row.js';

export interface FeederProcessorOptions {
  readonly feeder: Feeder;
  /** Where acked rewards go (the `rewards` table); without it they wait in the feeder's file. */
  readonly analytics?: Analytics;
  /** How often the timer prepares batches, publishes leases and writes rewards. */
  readonly everyMs?: number;
}

/** What the feeder reads and writes: the graph declares it the same whether `run` wires it or not. */
export const FEEDER = {
  name: 'feeder',
  description: 'rollout batches leased to trainer ranks over HTTP; acks carry rewards back to ClickHouse',
  reads: ['mix.state', 'qa.classified', 'qa.withdrawn'],
  writes: ['rollout.batches'],
  stores: ['published'],
  sinks: ['feeder:pool', 'clickhouse:rewards'],
  scope: 'global',
} as const satisfies Omit<Processor, 'process'>;

/**
 * The feeder in the topology. Its inputs (the pool of classified QA less those withdrawn, the
 * latest mix) go into the feeder's file through ctx.sink, idempotently, before the step commits.
 * Its timer cuts batches ahead (a bounded number per rank), publishes each lease made since the
 * last step on `rollout.batches` (the `published` store holds how far: one step emits the leases
 * and moves the mark, atomically), and writes acked rewards to ClickHouse (idempotent by run,
 * item, step).
 */
export function feederProcessor(opts: FeederProcessorOptions): Processor {
  const { feeder, analytics } = opts;
  let rewardsInFlight = 0;
  return {
    ...FEEDER,
    async process(batch: readonly InputRecord[], ctx: StepContext) {
      const items: PoolItem[] = [];
      const withdrawn: string[] = [];
      let mix: MixState | null = null;
      for (const r of batch) {
        if (r.topic === 'mix.state') {
          const m = r.value as MixState;
          if (!mix || m.version > mix.version) mix = m;
        } else if (r.topic === 'qa.withdrawn') withdrawn.push((r.value as QaWithdrawal).qaId);
        else items.push(poolItem(r.value as ClassifiedQa));
      }
      ctx.sink(async () => {
        if (items.length) feeder.addItems(items);
        if (withdrawn.length) feeder.withdrawItems(withdrawn);
        if (mix) feeder.setMix(mix);
      });
    },
    punctuate: {
      everyMs: opts.everyMs ?? 200,
      async run(ctx: StepContext) {
        feeder.prepare();
        publishLeases(feeder, ctx);
        if (!analytics) return;
        const pending = feeder.pendingRewards();
        if (pending.rows.length === 0 || pending.through <= rewardsInFlight) return;
        rewardsInFlight = pending.through;
        ctx.sink(async () => {
          try {
            await recordRewards(analytics, pending.rows);
            feeder.dropRewardsThrough(pending.through);
          } finally {
            rewardsInFlight = 0;
          }
        });
      },
    },
  };
}

function publishLeases(feeder: Feeder, ctx: StepContext): void {
  const store = ctx.store('published');
  const after = store.get<number>('leases') ?? 0;
  // The mark read here may be a step of this transaction, not yet committed: forget only leases
  // well below it (a transaction holds a few steps of at most 256 leases each).
  if (after > 8192) feeder.dropLeasesThrough(after - 8192);
  const leases = feeder.leasesAfter(after);
  for (const { lease } of leases) ctx.emit('rollout.batches', lease.id, lease);
  const last = leases.at(-1);
  if (last) store.put('leases', last.seq);
}
