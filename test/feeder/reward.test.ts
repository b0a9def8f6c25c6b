import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { score } from '../../reward/index.js';
import { RewardRequestItem } from '../../schemas/feeder.js';

interface Row {
  kind: 'mcq' | 'free-form';
  ground_truth: string;
  options: string[];
  aliases?: string[];
  output: string;
  note: string;
}
type Case = Row & { score: 0 | 1 };

// The same two tables run in clients/python/tests/test_reward.py: one set of rules, two languages.
const cases = JSON.parse(readFileSync('test/fixtures/reward-cases.json', 'utf8')) as Case[];
const adversarial = JSON.parse(readFileSync('test/fixtures/reward-adversarial.json', 'utf8')) as Row[];

const scoreOf = (row: Row) => {
  const { note: _note, ...item } = row;
  return score(RewardRequestItem.parse(item));
};

describe('verifiable reward', () => {
  it('has a table of at least 60 formats, right and wrong, of both kinds', () => {
    expect(cases.length).toBeGreaterThanOrEqual(60);
    for (const kind of ['mcq', 'free-form'])
      for (const s of [0, 1])
        expect(cases.filter((c) => c.kind === kind && c.score === s).length).toBeGreaterThan(10);
  });

  it.each(cases.map((c) => [c.note, c] as const))('%s', (_note, c) => {
    const { score: _want, ...row } = c;
    const r = scoreOf(row);
    expect(r.score, `${r.reason} | ${JSON.stringify(c.output)}`).toBe(c.score);
    expect(r.reason).toBeTruthy();
  });
});

describe('the reward cannot be gamed', () => {
  it('has every option, every letter and every number from 0 to 100 in one output, for several truths', () => {
    const notes = adversarial.map((r) => r.note);
    for (const t of 'ABCD') expect(notes).toContain(`every letter A to J (truth ${t})`);
    for (const t of ['0', '3', '42', '100'])
      expect(notes).toContain(`every number 0-100, one per line (truth ${t})`);
    expect(notes.filter((n) => /question echoed/.test(n)).length).toBeGreaterThanOrEqual(4);
  });

  it.each(adversarial.map((r) => [r.note, r] as const))('%s scores 0', (_note, row) => {
    const r = scoreOf(row);
    expect(r.score, `${r.reason} | ${JSON.stringify(row.output).slice(0, 200)}`).toBe(0);
  });
});
