import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readAnswer } from '../../reward/index.js';

// Issue 61: the rules decide what they can and leave the rest undecided (readAnswer's undecided:
// the only outputs a verifier is asked about). The table test/fixtures/reward-undecided.json holds
// invented outputs of each class; the properties below hold them over generated names, dates and
// lists. clients/python/tests/test_reward_undecided.py reads the same table and runs the same
// properties under hypothesis.

interface Row {
  ground_truth: string;
  aliases?: string[];
  output: string;
  score: 0 | 1;
  undecided: boolean;
  note: string;
}
const TABLE = JSON.parse(readFileSync('test/fixtures/reward-undecided.json', 'utf8')) as { rows: Row[] };
const RUNS = { numRuns: 150, seed: Number(process.env.FC_SEED ?? 61) };

const read = (ground_truth: string, output: string, aliases: string[] = []) =>
  readAnswer({ kind: 'free-form', ground_truth, aliases, output });

/** A made-up capitalised word ("Vantor"): no table of the rules holds one. */
const word = fc
  .array(fc.tuple(fc.constantFrom(...'bdfgklmnprtvz'), fc.constantFrom(...'aeiou')), {
    minLength: 2,
    maxLength: 3,
  })
  .map((syllables) => syllables.map(([c, v]) => c + v).join(''))
  .map((w) => w[0]!.toUpperCase() + w.slice(1));
const names = fc.uniqueArray(fc.tuple(word, word), {
  minLength: 3,
  maxLength: 3,
  selector: ([, last]) => last[0],
});
const MONTHS = ['January', 'March', 'April', 'June', 'August', 'October', 'December'];
const date = fc.record({
  day: fc.integer({ min: 1, max: 28 }),
  month: fc.constantFrom(...MONTHS),
  year: fc.integer({ min: 1700, max: 2030 }),
});
const ordinal = (d: number) =>
  `${d}${d === 1 || d === 21 ? 'st' : d === 2 || d === 22 ? 'nd' : d === 3 || d === 23 ? 'rd' : 'th'}`;

describe('what the rules decide and leave undecided (issue 61)', () => {
  it.each(TABLE.rows)('$note: $output', (row) => {
    const r = read(row.ground_truth, row.output, row.aliases);
    expect(r.result.score, r.result.reason).toBe(row.score);
    expect(r.undecided !== null, r.result.reason).toBe(row.undecided);
  });

  it('a list without a disjunction is undecided; with one it is a hedge, refused (hedgeOrList)', () => {
    fc.assert(
      fc.property(names, fc.integer({ min: 0, max: 2 }), (people, at) => {
        const [a, b, c] = people.map(([f, l]) => `${f} ${l}`) as [string, string, string];
        const reference = [a, b, c][at]!;
        const list = read(reference, `The founders were ${a}, ${b} and ${c}.`);
        expect(list.result.score).toBe(0);
        expect(list.undecided, list.result.reason).not.toBeNull();
        const hedge = read(reference, `The founder was ${a}, ${b} or ${c}.`);
        expect(hedge.result.score).toBe(0);
        expect(hedge.undecided, hedge.result.reason).toBeNull();
      }),
      RUNS,
    );
  });

  it('a date pays in either order; another month or another year is decided 0 (dayFirst, dateOfYear, anotherYear)', () => {
    fc.assert(
      fc.property(
        date,
        fc.constantFrom(...MONTHS),
        fc.integer({ min: 1, max: 30 }),
        ({ day, month, year }, other, later) => {
          const writings = [
            `${month} ${day}, ${year}`,
            `${day} ${month} ${year}`,
            `the ${ordinal(day)} of ${month}, ${year}`,
            `${month} ${ordinal(day)} ${year}`,
          ];
          for (const reference of [`${month} ${day}, ${year}`, `${day} ${month} ${year}`, `${month} ${year}`])
            for (const written of writings) {
              const r = read(reference, `It was first held on ${written}.`);
              expect(r.result.score, `${reference} | ${written}: ${r.result.reason}`).toBe(1);
            }
          if (other !== month) {
            const r = read(`${month} ${day}, ${year}`, `It was first held on ${other} ${day}, ${year}.`, [
              String(year),
            ]);
            expect([r.result.score, r.undecided], r.result.reason).toEqual([0, null]);
          }
          const r = read(`${month} ${year}`, `It was first held in ${year + later}.`);
          expect([r.result.score, r.undecided], r.result.reason).toEqual([0, null]);
        },
      ),
      RUNS,
    );
  });

  it('a capitalised answer glued to the word before it pays as if spaced (gluedAfterWord)', () => {
    fc.assert(
      fc.property(names, (people) => {
        const [first, last] = people[0]!;
        const reference = `${first} ${last}`;
        const spaced = read(reference, `The role went to ${reference}.`);
        const glued = read(reference, `The role went to${reference}.`);
        expect(glued.result).toEqual(spaced.result);
      }),
      RUNS,
    );
  });

  it('the reference as one numbered item of three or more is undecided (enumeration)', () => {
    fc.assert(
      fc.property(names, fc.integer({ min: 0, max: 2 }), fc.constantFrom('.', ')'), (people, at, mark) => {
        const items = people.map(([f, l]) => `${f} ${l}`);
        const lines = items.map((item, k) => `${k + 1}${mark} ${item}`);
        const r = read(items[at]!, ['Some candidates:', ...lines].join('\n'));
        expect(r.result.score).toBe(0);
        expect(r.undecided, r.result.reason).not.toBeNull();
      }),
      RUNS,
    );
  });
});
