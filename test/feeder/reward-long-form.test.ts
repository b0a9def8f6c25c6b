import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { score } from '../../reward/index.js';
import { RULES } from '../../reward/rules.js';
import { RewardRequestItem } from '../../schemas/feeder.js';

// Issue 45: the reward against labels on outputs of the length and shape reasoning models write
// (paragraphs, a <think> block, a final line, trailing remarks), per class of what the rules
// used to get wrong, right and wrong. The labels are what a person grading the answer says; a row
// marked beyondRules is right by meaning only, which no rule can pay without paying hacks: there
// the rules must give 0 (what the verifier model of issue 45 is for). The same table runs in
// clients/python/tests/test_reward_long_form.py, which also checks TypeScript = Python row for row.

interface Row {
  class: string;
  kind: 'mcq' | 'free-form';
  ground_truth: string;
  options: string[];
  aliases?: string[];
  output: string;
  label: 0 | 1;
  note: string;
  beyondRules?: boolean;
}
const rows = JSON.parse(readFileSync('test/fixtures/reward-long-form.json', 'utf8')) as Row[];

const scoreOf = (row: Pick<Row, 'kind' | 'ground_truth' | 'options' | 'aliases' | 'output'>) =>
  score(
    RewardRequestItem.parse({
      kind: row.kind,
      ground_truth: row.ground_truth,
      options: row.options,
      aliases: row.aliases ?? [],
      output: row.output,
    }),
  );

describe('reward on long-form outputs (issue 45)', () => {
  it('has each class both ways, in several paragraphs', () => {
    const classes = new Set(rows.map((r) => r.class));
    expect(classes.size).toBeGreaterThanOrEqual(10);
    for (const c of classes) {
      if (c === 'meaning') continue;
      for (const label of [0, 1])
        expect(
          rows.some((r) => r.class === c && r.label === label),
          c,
        ).toBe(true);
    }
    // Long form: most rows are several paragraphs, not one line.
    expect(rows.filter((r) => r.output.split('\n').length >= 3).length).toBeGreaterThan(rows.length * 0.8);
  });

  it.each(rows.map((r) => [`${r.class}: ${r.note}`, r] as const))('%s', (_name, row) => {
    const r = scoreOf(row);
    // A row right only by meaning is no rule's to pay: the rules give 0, the verifier decides.
    const want = row.beyondRules ? 0 : row.label;
    expect(r.score, `${r.reason} | ${row.output.slice(-200)}`).toBe(want);
  });
});

// Properties over the table and generated outputs: the same as hypothesis runs in Python.
const paid = rows.filter((r) => r.label === 1 && !r.beyondRules);
const remark = fc.oneof(
  fc.constantFrom(...RULES.endOfAnswer.remarks).map((r) => `${r[0]!.toUpperCase()}${r.slice(1)}!`),
  fc
    .tuple(fc.constantFrom('Confidence', 'Certainty'), fc.constantFrom('high', 'medium', 'low', '90%', '0.8'))
    .map(([label, level]) => `${label}: ${level}`),
);

describe('reward properties on long-form outputs (issue 45)', () => {
  it('a trailing remark line after a correct answer never turns 1 into 0', () => {
    fc.assert(
      fc.property(fc.constantFrom(...paid), remark, fc.constantFrom('\n', '\n\n'), (row, line, gap) => {
        const r = scoreOf({ ...row, output: `${row.output}${gap}${line}` });
        expect(r.score, `${r.reason} | ${line}`).toBe(1);
      }),
      { numRuns: 200 },
    );
  });

  it('a wrong integer never pays, however it is written; the right one does', () => {
    const template = fc.constantFrom(
      (n: string) => `The answer is ${n}.`,
      (n: string) => `Counting both sets, there are ${n} copies in total.`,
      (n: string) => `Let me work it out.\n\nEach parent gives half.\n\nAnswer: ${n}[2]`,
      (n: string) => `\\boxed{${n}}`,
      (n: string) => `So the final count is ${n}. It is the usual number for this species.`,
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 3000 }),
        fc.integer({ min: -40, max: 40 }).filter((d) => d !== 0),
        template,
        (n, d, write) => {
          const wrong = n + d;
          fc.pre(wrong >= 0);
          const item = { kind: 'free-form' as const, ground_truth: String(n), options: [] };
          expect(scoreOf({ ...item, output: write(String(wrong)) }).score, `${wrong} for ${n}`).toBe(0);
          expect(scoreOf({ ...item, output: write(String(n)) }).score, `${n} for ${n}`).toBe(1);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('options restated in the reasoning pay only the final choice, and only when it is the key', () => {
    const options = ['Mitochondria', 'Ribosome', 'Golgi apparatus', 'Nucleus', 'Lysosome'];
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4 }),
        fc.integer({ min: 0, max: 4 }),
        fc.constantFrom('Choice {L}: {T}', '{L}) {T}', 'Option {L}: {T}', '({L}) {T}'),
        fc.constantFrom('Answer: {L}', 'Solution: Choice_{L}', 'The best fit is {L}.', 'Final answer: {L}'),
        (key, chosen, restate, final) => {
          const letter = (i: number) => 'ABCDE'[i]!;
          const listed = options
            .map((t, i) => restate.replace('{L}', letter(i)).replace('{T}', t))
            .join('\n');
          const output = `Let me list the options.\n\n${listed}\n\nWeighing them, one organelle fits.\n\n${final.replace('{L}', letter(chosen))}`;
          const r = scoreOf({ kind: 'mcq', ground_truth: letter(key), options, output });
          expect(r.score, `${r.reason} | ${output}`).toBe(key === chosen ? 1 : 0);
        },
      ),
      { numRuns: 200 },
    );
  });
});
