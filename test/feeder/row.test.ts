import { describe, expect, it } from 'vitest';
import { groundTruthOf, type PoolItem, rolloutRow } from '../../processors/feeder/row.js';
import { score } from '../../reward/index.js';
import { FeederConfig } from '../../schemas/feeder.js';
import { RolloutItem } from '../../schemas/rollout-batch.js';
import { poolItems } from './fixtures.js';

const settings = FeederConfig.parse({});
const at = { index: 0, split: 'train' as const, copy: 0 };

describe('rollout rows', () => {
  it("carry the options and the right option's text in the ground truth (verl passes it alone)", () => {
    const mcq = poolItems(4).find((i) => i.kind === 'mcq' && i.answer === 'C')!;
    const row = RolloutItem.parse(rolloutRow(mcq, settings, at));
    expect(row.ground_truth).toEqual({
      answer: 'C',
      kind: 'mcq',
      options: [...mcq.options],
      aliases: ['Golgi apparatus'],
    });
    expect(row.reward_model.ground_truth).toEqual(row.ground_truth);
    expect(row.answer).toBe('C');
    // What the row carries is enough to grade an answer given as the option's text.
    const truth = row.reward_model.ground_truth;
    expect(score({ ...truth, ground_truth: truth.answer, output: 'The Golgi apparatus.' }).score).toBe(1);
  });

  it('give a free-form answer the forms the reward accepts as aliases', () => {
    const free: PoolItem = {
      ...poolItems(5)[4]!,
      kind: 'free-form',
      options: [],
      answer: 'deoxyribonucleic acid (DNA)',
    };
    expect(groundTruthOf(free)).toEqual({
      answer: 'deoxyribonucleic acid (DNA)',
      kind: 'free-form',
      options: [],
      aliases: ['deoxyribonucleic acid', 'DNA'],
    });
    expect(groundTruthOf({ ...free, answer: 'apoptosis' }).aliases).toEqual([]);
  });
});
