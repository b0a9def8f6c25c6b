import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { score } from '../../reward/index.js';
import { RULES } from '../../reward/rules.js';

// Issue 50: the reward pays where the reference occurs and refuses only what a policy could game.
// As properties over generated references (names, one-word terms, counts, years) and answers in
// the shapes people write: padding a correct answer with neutral sentences never turns it to 0;
// a second, different candidate of the same kind in the final answer always does; accents, case,
// articles and punctuation never change a score. The same properties run under hypothesis in
// clients/python/tests/test_reward_people.py.

const RUNS = { numRuns: 150, seed: Number(process.env.FC_SEED ?? 50) };

const TABLE_WORDS = new Set([
  ...RULES.fillers,
  ...RULES.negators,
  ...RULES.continuations,
  ...RULES.listWords,
  ...RULES.clauseWords,
  ...RULES.unitWords,
  ...RULES.nameParticles,
  ...RULES.months,
  ...RULES.numberWords,
  ...RULES.subjectVerbs,
]);
/** A made-up word no table of the rules holds, of at least four letters. */
const word = fc
  .string({ unit: fc.constantFrom(...'bcdfghklmnprstvz'), minLength: 2, maxLength: 3 })
  .chain((consonants) =>
    fc
      .array(fc.constantFrom(...'aeiou'), { minLength: consonants.length, maxLength: consonants.length })
      .map((vowels) => [...consonants].map((c, k) => c + vowels[k]).join('')),
  )
  .filter((w) => w.length >= 4 && !TABLE_WORDS.has(w));
const capital = (w: string) => w[0]!.toUpperCase() + w.slice(1);

/** A reference and another candidate of the same kind that is not it. */
interface Pair {
  readonly kind: 'name' | 'term' | 'count' | 'year';
  readonly reference: string;
  readonly other: string;
}
const name = fc
  .tuple(word, word, word)
  .filter(([, last, otherLast]) => last[0] !== otherLast[0])
  .map(
    ([first, last, otherLast]): Pair => ({
      kind: 'name',
      reference: `${capital(first)} ${capital(last)}`,
      other: `${capital(first)} ${capital(otherLast)}`,
    }),
  );
const term = fc
  .tuple(word, word)
  .filter(([a, b]) => a[0] !== b[0])
  .map(([a, b]): Pair => ({ kind: 'term', reference: a, other: b }));
const count = fc
  .tuple(fc.integer({ min: 2, max: 999 }), fc.integer({ min: 2, max: 999 }))
  .filter(([a, b]) => a !== b)
  .map(([a, b]): Pair => ({ kind: 'count', reference: String(a), other: String(b) }));
const year = fc
  .tuple(fc.integer({ min: 1000, max: 2099 }), fc.integer({ min: 1000, max: 2099 }))
  .filter(([a, b]) => a !== b)
  .map(([a, b]): Pair => ({ kind: 'year', reference: String(a), other: String(b) }));
const pair = fc.oneof(name, term, count, year);

/** Correct answers as people write them, the reference standing for X. */
const ANSWERS = [
  'X.',
  'The answer is X.',
  'I believe it is X.',
  'Answer: X',
  'It was X, as the record shows.',
];
/** Sentences that name nothing, deny nothing and hedge nothing. */
const NEUTRAL = [
  'Many sources agree on this point.',
  'The question concerns a well-known topic.',
  'Historians have written about it at length.',
  'Hope this helps!',
  'Quiz books often ask about this.',
  'It is a question that people do not often ask.',
];

const pays = (reference: string, output: string) =>
  score({ kind: 'free-form', ground_truth: reference, output });
const fill = (template: string, x: string) => template.replace('X', x);

describe('the reward against people (issue 50), as properties', () => {
  it('padding a correct answer with neutral sentences never turns it to 0', () => {
    fc.assert(
      fc.property(
        pair,
        fc.constantFrom(...ANSWERS),
        fc.array(fc.constantFrom(...NEUTRAL), { maxLength: 3 }),
        fc.array(fc.constantFrom(...NEUTRAL), { maxLength: 3 }),
        ({ reference }, answer, before, after) => {
          const output = [...before, fill(answer, reference), ...after].join('\n');
          expect(pays(reference, fill(answer, reference)).score).toBe(1);
          const r = pays(reference, output);
          expect(r.score, `${r.reason} | ${output}`).toBe(1);
        },
      ),
      RUNS,
    );
  });

  it('a second, different candidate of the same kind in the final answer always turns it to 0', () => {
    // The same with a head of the rules' table, or a longer name on one last word, after each.
    const both = [
      'X or Y',
      'Y or X',
      'X, Y',
      'either X or Y',
      'X and/or Y',
      'X (or Y)',
      'the X pathway or the Y pathway',
      'the X River or the Y River',
      'the X River, the Y River',
    ];
    fc.assert(
      fc.property(
        pair,
        fc.constantFrom(...ANSWERS),
        fc.constantFrom(...both),
        fc.array(fc.constantFrom(...NEUTRAL), { maxLength: 2 }),
        ({ reference, other }, answer, hedge, before) => {
          const final = fill(answer, hedge.replace('X', reference).replace('Y', other));
          const output = [...before, final].join('\n');
          const r = pays(reference, output);
          expect(r.score, `${r.reason} | ${output}`).toBe(0);
        },
      ),
      RUNS,
    );
  });

  it('accents, case, articles and punctuation never change a score', () => {
    const accented = (s: string) => s.replace(/[aeiou]/, (v) => `${v}\u0301`);
    const variants = (output: string, x: string): string[] => [
      output.replace(x, accented(x)),
      output.toLowerCase(),
      output.toUpperCase(),
      output.replace(x, `the ${x}`),
      output.replace(x, `"${x}"`),
      output.replace(/[.!]$/, '') || output,
      `${output.replace(/[.!]$/, '')}!`,
    ];
    fc.assert(
      fc.property(
        pair,
        fc.constantFrom(...ANSWERS),
        fc.boolean(),
        fc.array(fc.constantFrom(...NEUTRAL), { maxLength: 2 }),
        ({ kind, reference, other }, answer, right, after) => {
          const x = right ? reference : other;
          const output = [fill(answer, x), ...after].join('\n');
          const want = pays(reference, output).score;
          expect(want).toBe(right ? 1 : 0);
          // Numbers have no case or accents; an article before a number is no article of it.
          const changed =
            kind === 'count' || kind === 'year' ? variants(output, x).slice(4) : variants(output, x);
          for (const v of changed) {
            const r = pays(reference, v);
            expect(r.score, `${r.reason} | ${v}`).toBe(want);
          }
          // The reference written with accents pays the answer without them, and the other way.
          if (kind === 'name' || kind === 'term') expect(pays(accented(reference), output).score).toBe(want);
        },
      ),
      RUNS,
    );
  });

  it('a citation mark run into the answer ("X1.", "X12,") never changes a score (citationDigits)', () => {
    fc.assert(
      fc.property(
        fc.oneof(name, term),
        fc.constantFrom(...ANSWERS),
        fc.boolean(),
        fc.constantFrom('1', '2', '12'),
        fc.array(fc.constantFrom(...NEUTRAL), { maxLength: 2 }),
        ({ reference, other }, answer, right, mark, after) => {
          const x = right ? reference : other;
          const output = [fill(answer, x), ...after].join('\n');
          const cited = [fill(answer, `${x}${mark}`), ...after].join('\n');
          const r = pays(reference, cited);
          expect(r.score, `${r.reason} | ${cited}`).toBe(pays(reference, output).score);
          expect(r.score).toBe(right ? 1 : 0);
        },
      ),
      RUNS,
    );
  });

  it("a title's inner punctuation (a comma between its words, quotes around one) never changes a score (loosePunctuation)", () => {
    const title = fc
      .tuple(word, word, word, word)
      .filter(([, , last, otherLast]) => last[0] !== otherLast[0])
      .map(([a, b, c, d]) => ({
        reference: `${capital(a)} ${b} ${capital(c)}`,
        other: `${capital(a)} ${b} ${capital(d)}`,
        parts: [capital(a), b],
      }));
    fc.assert(
      fc.property(
        title,
        fc.constantFrom(...ANSWERS),
        fc.boolean(),
        fc.array(fc.constantFrom(...NEUTRAL), { maxLength: 2 }),
        ({ reference, other, parts: [a, b] }, answer, right, after) => {
          const x = right ? reference : other;
          const last = x.split(' ')[2]!;
          const output = [fill(answer, x), ...after].join('\n');
          expect(pays(reference, output).score).toBe(right ? 1 : 0);
          for (const written of [`${a} ${b}, ${last}`, `${a}, ${b} ${last}`, `${a} "${b}" ${last}`]) {
            const v = [fill(answer, written), ...after].join('\n');
            const r = pays(reference, v);
            expect(r.score, `${r.reason} | ${v}`).toBe(right ? 1 : 0);
          }
        },
      ),
      RUNS,
    );
  });

  it('a place and a region of the table after a comma pays the place, or the region; two regions never pay', () => {
    const regions = [...RULES.regions].filter((r) => !TABLE_WORDS.has(r));
    const titled = (r: string) => r.split(' ').map(capital).join(' ');
    fc.assert(
      fc.property(
        fc.oneof(name, term),
        fc.constantFrom(...regions),
        fc.constantFrom(...regions),
        fc.constantFrom(...ANSWERS),
        ({ reference }, region, other, answer) => {
          const place = `${reference}, ${titled(region)}`;
          const r = pays(reference, fill(answer, place));
          expect(r.score, `${r.reason} | ${fill(answer, place)}`).toBe(1);
          const asRegion = pays(region, fill(answer, place));
          expect(asRegion.score, `${asRegion.reason} | ${fill(answer, place)}`).toBe(1);
          if (other === region) return;
          const two = fill(answer, `${titled(region)}, ${titled(other)}`);
          const listed = pays(region, two);
          expect(listed.score, `${listed.reason} | ${two}`).toBe(0);
        },
      ),
      RUNS,
    );
  });
});
