import type { RewardRow } from '../../analytics/qa-store.js';
import type { AckRequest } from '../../schemas/feeder.js';
import { isIssue, type Observation, observe } from './difficulty.js';
import { FeederError } from './feeder-error.js';
import type { BatchSlot } from './store.js';

// An ack read against the batch it acks: which slots it covers, what their rollouts say, and the
// reward rows it queues for ClickHouse. Every check throws before the feeder writes anything, so
// a refused ack changes nothing.

/** The slots an ack covers: the ones named, or every slot not yet acked. */
export function ackTarget(
  req: AckRequest,
  batchId: string,
  slotCount: number,
  acked: ReadonlySet<number>,
): number[] {
  if (!req.slots) return [...Array(slotCount).keys()].filter((s) => !acked.has(s));
  const seen = new Set<number>();
  req.slots.forEach((s, i) => {
    if (!Number.isInteger(s) || s < 0 || s >= slotCount)
      throw new FeederError(
        400,
        'bad-slot',
        `slots[${i}] = ${s} is outside batch "${batchId}" (slots 0..${slotCount - 1})`,
      );
    if (seen.has(s)) throw new FeederError(400, 'bad-slot', `slot ${s} is listed twice`);
    seen.add(s);
  });
  const again = req.slots.filter((s) => acked.has(s));
  if (again.length)
    throw new FeederError(
      409,
      'slot-already-acked',
      `slot(s) ${again.join(', ')} of batch "${batchId}" already acked`,
    );
  return req.slots;
}

/** Each covered slot's observation of its rollouts (null without any), every list checked first. */
export function ackObservations(req: AckRequest, covered: number): (Observation | null)[] {
  for (const [name, values] of [
    ['rewards', req.rewards],
    ['responseLengths', req.responseLengths],
    ['rollouts', req.rollouts],
  ] as const) {
    if (values && values.length !== covered)
      throw new FeederError(
        400,
        'bad-length',
        `${name} has ${values.length} entries; the ack covers ${covered} slot(s)`,
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
  return Array.from({ length: covered }, (_, i) => {
    const o = observe(req.rollouts?.[i], req.rewards?.[i], `rollouts[${i}]`);
    if (isIssue(o)) throw new FeederError(400, o.code, o.reason);
    return o;
  });
}

/** Each covered slot's reward: the one sent, else the mean of its rollouts, else none. */
export function ackRewards(
  req: AckRequest,
  observations: readonly (Observation | null)[],
): (number | null)[] {
  return observations.map(
    (o, i) => req.rewards?.[i] ?? (req.rollouts?.[i] && o ? o.rewardSum / o.count : null),
  );
}

/** The reward rows of an ack: one per (run, item, step), copies of one item sharing their mean. */
export function rewardRows(
  req: AckRequest,
  at: { step: number; mixVersion: number; slots: readonly BatchSlot[]; target: readonly number[] },
  rewards: readonly (number | null)[],
  observations: readonly (Observation | null)[],
): RewardRow[] {
  const byItem = new Map<string, { rs: number[]; rollouts: number; passes: number; flat: number }>();
  rewards.forEach((r, i) => {
    if (r === null) return;
    const id = at.slots[at.target[i]!]![0];
    const o = req.rollouts?.[i] ? observations[i] : null;
    const sums = byItem.get(id) ?? { rs: [], rollouts: 0, passes: 0, flat: 0 };
    sums.rs.push(r);
    sums.rollouts += o?.count ?? 0;
    sums.passes += o?.passes ?? 0;
    sums.flat += o?.flat ? 1 : 0;
    byItem.set(id, sums);
  });
  return [...byItem].map(([qaId, sums]) => ({
    qaId,
    run: req.run,
    step: at.step,
    reward: sums.rs.reduce((a, b) => a + b, 0) / sums.rs.length,
    mixVersion: at.mixVersion,
    rollouts: sums.rollouts,
    passes: sums.passes,
    flatGroups: sums.flat,
  }));
}
