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
 * (seed, id, copy). The order of two slots never depends on the other items, so when a new mix
 * version changes the selection, the slots both versions share keep their relative order.
 */
export function epochOrder(items: Iterable<{ id: string; copies: number }>, seed: number): Slot[] {
  const keyed: { slot: Slot; u: number }[] = [];
  for (const { id, copies } of items) {
    for (let copy = 0; copy < copies; copy++) {
      keyed.push({ slot: { id, copy }, u: uniformOf(itemKey(`${id}#${copy}`), seed) });
    }
  }
  keyed.sort(
    (a, b) =>
      a.u - b.u || (a.slot.id < b.slot.id ? -1 : a.slot.id > b.slot.id ? 1 : a.slot.copy - b.slot.copy),
  );
  return keyed.map((k) => k.slot);
}
