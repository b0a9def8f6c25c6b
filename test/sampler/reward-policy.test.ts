import { describe, expect, it } from 'vitest';
import { rewardPolicyMove } from '../../processors/sampler/reward-policy.js';
import { tvd } from '../../processors/sampler/selection.js';
import { normalise } from '../../processors/sampler/smoothing.js';

const target = { genetics: 0.5, microbiology: 0.3, ecology: 0.15, zoology: 0.05 };
const config = { mastered: 0.8, tvdBudget: 0.05, minRewards: 10 };
const apply = (w: Record<string, number>) =>
  normalise(Object.fromEntries(Object.entries(target).map(([c, p]) => [c, p * (w[c] ?? 1)])));

describe('the reward-aware mix policy', () => {
  it('moves exactly the budget from mastered topics to the others, the weakest gaining most', () => {
    const move = rewardPolicyMove(
      target,
      [
        { category: 'genetics', meanReward: 0.95, n: 100 },
        { category: 'microbiology', meanReward: 0.5, n: 100 },
        { category: 'ecology', meanReward: 0.1, n: 100 },
      ],
      config,
    )!;
    const moved = apply(move.weights);
    expect(tvd(moved, target)).toBeCloseTo(0.05, 10);
    expect(moved.genetics).toBeCloseTo(0.45, 10);
    expect(moved.zoology).toBeCloseTo(0.05, 10); // no rewards: untouched
    // Gains in proportion to share × (1 - reward): microbiology 0.15, ecology 0.135.
    expect(moved.microbiology! - 0.3).toBeCloseTo((0.05 * 0.15) / 0.285, 10);
    expect(moved.ecology! - 0.15).toBeCloseTo((0.05 * 0.135) / 0.285, 10);
    expect(move.reason).toMatch(
      /0\.050 of the α-target moved from mastered genetics \(0\.95 over 100\) to microbiology/,
    );
  });

  it('leaves the target alone without enough rewards, or without a mastered or an unmastered topic', () => {
    expect(
      rewardPolicyMove(
        target,
        [
          { category: 'genetics', meanReward: 0.95, n: 5 },
          { category: 'ecology', meanReward: 0.1, n: 5 },
        ],
        config,
      ),
    ).toBeNull();
    expect(rewardPolicyMove(target, [{ category: 'genetics', meanReward: 0.95, n: 50 }], config)).toBeNull();
    expect(rewardPolicyMove(target, [{ category: 'ecology', meanReward: 0.2, n: 50 }], config)).toBeNull();
  });

  it('never takes more than half of what the mastered topics hold', () => {
    const move = rewardPolicyMove(
      target,
      [
        { category: 'zoology', meanReward: 1, n: 50 },
        { category: 'ecology', meanReward: 0, n: 50 },
      ],
      { ...config, tvdBudget: 0.5 },
    )!;
    expect(move.moved).toBeCloseTo(0.025, 10);
    expect(apply(move.weights).zoology).toBeCloseTo(0.025, 10);
  });
});
