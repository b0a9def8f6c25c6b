import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { score } from '../../processors/reward.js';
import { RewardRequestItem } from '../../schemas/feeder.js';

interface Case {
  kind: 'mcq' | 'free-form';
  ground_truth: string;
  options: string[];
  aliases?: string[];
  output: string;
  score: 0 | 1;
  note: string;
}

// The same table runs in clients/python/tests/test_reward.py: one set of rules, two languages.
const cases = JSON.parse(readFileSync('test/fixtures/reward-cases.json', 'utf8')) as Case[];

describe('verifiable reward', () => {
  it('has a table of at least 40 formats, right and wrong, of both kinds', () => {
    expect(cases.length).toBeGreaterThanOrEqual(40);
    for (const kind of ['mcq', 'free-form'])
      for (const s of [0, 1])
        expect(cases.filter((c) => c.kind === kind && c.score === s).length).toBeGreaterThan(3);
  });

  it.each(cases.map((c) => [c.note, c] as const))('%s', (_note, c) => {
    const { score: _want, note: _note2, ...item } = c;
    const r = score(RewardRequestItem.parse(item));
    expect(r.score, `${r.reason} | ${JSON.stringify(c.output)}`).toBe(c.score);
    expect(r.reason).toBeTruthy();
  });
});
