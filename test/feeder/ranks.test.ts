import { describe, expect, it } from 'vitest';
import type { Feeder } from '../../processors/feeder/feeder.js';
import { nextBatchSize, paddingOf } from '../../processors/feeder/order.js';
import { mix, poolItems, trainCopies } from './fixtures.js';
import { feederWith, type Leased, leased } from './setup.js';

// Data-parallel ranks take the same number of steps per epoch (issue 20 follow-up): an epoch is cut
// into whole rounds of worldSize batches, the last round an even split padded with repeats of the
// epoch's first slots (fewer than worldSize), as torch's DistributedSampler pads.

/** Every rank leases and acks until its epoch ends, ranks taking turns; each rank's batches. */
function epochByRank(feeder: Feeder, run: string, worldSize: number, epoch: number): Leased[][] {
  const byRank: Leased[][] = Array.from({ length: worldSize }, () => []);
  const done = new Set<number>();
  while (done.size < worldSize) {
    for (let rank = 0; rank < worldSize; rank++) {
      if (done.has(rank)) continue;
      const r = feeder.lease({ run, rank, worldSize });
      if (r.status === 'epoch-end') {
        expect(r.epoch).toBe(epoch);
        done.add(rank);
        continue;
      }
      const l = leased(r);
      expect(l.batch.epoch).toBe(epoch);
      byRank[rank]!.push(l);
      feeder.ack({ run, batchId: l.batch.id, leaseId: l.leaseId, rank });
    }
  }
  return byRank;
}

const slotKey = (i: Leased['batch']['items'][number]) => `${i.extra_info.qa_id}#${i.extra_info.copy}`;

function selectionOf(items: number): string[] {
  const pool = poolItems(items);
  const copies = trainCopies(pool, mix(1));
  return pool.flatMap((it) => Array.from({ length: copies(it) }, (_, copy) => `${it.id}#${copy}`));
}

describe('feeder ranks', () => {
  it('an epoch with fewer batches than ranks still gives every rank one batch, epoch after epoch', () => {
    const selected = selectionOf(12);
    const worldSize = 32;
    expect(selected.length).toBeGreaterThan(0);
    expect(selected.length).toBeLessThan(worldSize);
    const feeder = feederWith(12, { batchSize: 4, leaseMs: 60_000 });
    for (let epoch = 0; epoch < 3; epoch++) {
      const byRank = epochByRank(feeder, 'small', worldSize, epoch);
      // One step per rank per epoch, one slot each: no rank races ahead through empty epochs.
      expect(byRank.map((b) => b.length)).toEqual(Array(worldSize).fill(1));
      expect(byRank.map((b) => b[0]!.batch.items.length)).toEqual(Array(worldSize).fill(1));
      const keys = byRank.flatMap((b) => b[0]!.batch.items.map(slotKey));
      expect(new Set(keys)).toEqual(new Set(selected));
      // The repeats are the epoch's first slots, in order.
      expect(keys.slice(selected.length)).toEqual(keys.slice(0, worldSize - selected.length));
    }
    const status = feeder.runStatus('small');
    expect(status.ranks.map((r) => r.epoch)).toEqual(Array(worldSize).fill(3));
    expect(status.epochs.map((e) => [e.planned, e.acked])).toEqual(Array(3).fill([worldSize, worldSize]));
  });

  it('every rank gets as many batches as the others; the last round is an even split', () => {
    const selected = selectionOf(160);
    const [worldSize, batchSize] = [3, 8];
    expect(selected.length % (worldSize * batchSize)).not.toBe(0);
    const feeder = feederWith(160, { batchSize, leaseMs: 60_000 });
    const byRank = epochByRank(feeder, 'even', worldSize, 0);
    const counts = byRank.map((b) => b.length);
    expect(new Set(counts).size).toBe(1);
    const last = byRank.map((b) => b.at(-1)!.batch.items.length);
    expect(new Set(last).size).toBe(1);
    const keys = byRank.flatMap((b) => b.flatMap((l) => l.batch.items.map(slotKey)));
    expect(new Set(keys)).toEqual(new Set(selected));
    expect(keys.length - selected.length).toBeLessThan(worldSize);
    for (const b of byRank) for (const l of b.slice(0, -1)) expect(l.batch.items).toHaveLength(batchSize);
  });

  it('a new mix version mid-round still ends the epoch on a whole round', async () => {
    const worldSize = 4;
    const feeder = feederWith(100, { batchSize: 4, leaseMs: 60_000 });
    // Rank 0 takes batch 0 of the first round; then Ecology leaves the mix.
    const first = leased(feeder.lease({ run: 'mv', rank: 0, worldSize }));
    feeder.ack({ run: 'mv', batchId: first.batch.id, leaseId: first.leaseId });
    feeder.setMix(
      mix(2, { quotas: { Genetics: mix(1).quotas.Genetics, Microbiology: mix(1).quotas.Microbiology } }),
    );
    await feeder.selectionMade();
    const byRank = epochByRank(feeder, 'mv', worldSize, 0);
    byRank[0]!.unshift(first);
    expect(byRank.flat().filter((l) => l.batch.mixVersion === 2).length).toBeGreaterThan(0);
    expect(new Set(byRank.map((b) => b.length)).size).toBe(1);
  });

  it('nextBatchSize over a padded plan cuts whole rounds, with fewer repeats than ranks', () => {
    const wrong: string[] = [];
    for (let worldSize = 1; worldSize <= 6; worldSize++) {
      for (let batchSize = 1; batchSize <= 5; batchSize++) {
        for (let index = 0; index < 2 * worldSize; index++) {
          for (let left = 0; left <= 3 * worldSize * batchSize + 1; left++) {
            const padding = paddingOf(left, index, worldSize, batchSize);
            const where = JSON.stringify({ worldSize, batchSize, index, left, padding });
            if (padding >= worldSize || (left === 0 && index % worldSize === 0 && padding !== 0))
              wrong.push(`${where}: padding`);
            let rest = left + padding;
            let cut = index;
            let lastRound: number[] = [];
            while (rest > 0) {
              const size = nextBatchSize(rest, cut, worldSize, batchSize);
              if (size <= 0 || size > Math.min(rest, batchSize)) wrong.push(`${where}: size ${size}`);
              if (size <= 0) break;
              if (cut % worldSize === 0) lastRound = [];
              lastRound.push(size);
              rest -= size;
              cut++;
            }
            if (cut % worldSize !== 0) wrong.push(`${where}: ends mid-round`);
            // Within the last round no batch is smaller than a later one.
            if (lastRound.some((s, k) => k > 0 && s > lastRound[k - 1]!))
              wrong.push(`${where}: ${lastRound}`);
          }
        }
      }
    }
    expect(wrong).toEqual([]);
  });
});
