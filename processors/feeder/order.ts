import { itemKey, uniformOf } from '../sampler/selection.js';

/** One copy of one item in an epoch's order. */
export interface Slot {
  readonly id: string;
  readonly copy: number;
}

/** The seed of one run's epoch: the mix's seed mixed with the run and the epoch number. */
export function epochSeed(mixSeed: number, run: string, epoch: number): number {
  return (mixSeed ^ (itemKey(`${run}\u0000${epoch}`) % 0x1_0000_0000)) >>> 0;
}

/**
 * The deterministic order of an epoch: every selected item `copies` times, sorted by a hash of
 * (seed, id, copy), ties by id and copy. The order of two slots never depends on the other items,
 * so when a new mix version changes the selection, the slots both versions share keep their
 * relative order.
 */
export function epochOrder(items: readonly { id: string; copies: number }[], seed: number): Slot[] {
  const steps = epochOrderSteps(items, seed);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * epochOrder as steps of about `chunk` slots each (a yield between them), so that planning an
 * epoch of 100,000 slots in the background never holds the event loop for more than a few ms.
 */
export function* epochOrderSteps(
  items: readonly { id: string; copies: number }[],
  seed: number,
  chunk = 4096,
): Generator<void, Slot[]> {
  const ids: string[] = [];
  const copies: number[] = [];
  const us: number[] = [];
  for (const [k, { id, copies: n }] of items.entries()) {
    for (let copy = 0; copy < n; copy++) {
      ids.push(id);
      copies.push(copy);
      us.push(uniformOf(itemKey(`${id}#${copy}`), seed));
    }
    if (k % chunk === chunk - 1) yield;
  }
  const n = ids.length;
  // A bucket sort: the hashes are uniform in [0, 1), so n buckets hold one slot each on average
  // and the order costs O(n); a comparison sort of slot objects was most of planning an epoch
  // (about 0.5 s for 130,000 slots).
  const start = new Uint32Array(n + 1);
  const bucket = (i: number) => Math.min(n - 1, Math.floor(us[i]! * n));
  for (let i = 0; i < n; i++) start[bucket(i) + 1]!++;
  for (let b = 0; b < n; b++) start[b + 1]! += start[b]!;
  const fill = start.slice(0, n);
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[fill[bucket(i)]!++] = i;
  yield;
  const before = (a: number, b: number) =>
    us[a]! < us[b]! ||
    (us[a] === us[b] && (ids[a]! < ids[b]! || (ids[a] === ids[b] && copies[a]! < copies[b]!)));
  for (let b = 0; b < n; b++) {
    // Insertion sort within a bucket (a handful of slots at most).
    for (let k = start[b]! + 1; k < start[b + 1]!; k++) {
      const x = order[k]!;
      let j = k - 1;
      while (j >= start[b]! && before(x, order[j]!)) {
        order[j + 1] = order[j]!;
        j--;
      }
      order[j + 1] = x;
    }
  }
  const slots: Slot[] = [];
  for (let k = 0; k < n; k++) {
    slots.push({ id: ids[order[k]!]!, copy: copies[order[k]!]! });
    if (k % chunk === chunk - 1) yield;
  }
  return slots;
}

// Data-parallel ranks must take the same number of steps in an epoch: a DDP rank that runs out of
// batches while the others still train stops answering their all-reduce, and a rank with no batch
// at all in an epoch that has fewer batches than ranks would only see `epoch-end` and race through
// epochs. Batches go to ranks in turn (batch i to rank i mod worldSize), so every epoch is cut
// into whole rounds of worldSize batches, as torch's DistributedSampler (drop_last=false) does: the
// last round splits what is left evenly over its batches (each smaller than batchSize if need be),
// and the few slots short of an even split (fewer than worldSize) repeat the epoch's first slots.
// Padding, not dropping, so no selected item is left out of an epoch; a smaller last round, not a
// full one, so the repeats stay under worldSize slots.

/**
 * The size of the next batch cut: batchSize, or in the epoch's last round an even share of what is
 * left over the round's batches still to cut. `left` is the plan's slots not yet cut (padding
 * included), `index` the batches of the epoch already cut.
 */
export function nextBatchSize(left: number, index: number, worldSize: number, batchSize: number): number {
  const round = worldSize - (index % worldSize);
  return left >= round * batchSize ? batchSize : Math.ceil(left / round);
}

/**
 * How many slots to add to the end of a plan of `left` slots not yet cut so that the epoch ends on
 * a whole round of batches with nextBatchSize: 0 when it already does.
 */
export function paddingOf(left: number, index: number, worldSize: number, batchSize: number): number {
  let round = worldSize - (index % worldSize);
  if (left >= round * batchSize) {
    left = (left - round * batchSize) % (worldSize * batchSize);
    round = worldSize;
    if (left === 0) return 0;
  } else if (left === 0 && round === worldSize) {
    return 0;
  }
  return round * Math.max(1, Math.ceil(left / round)) - left;
}
