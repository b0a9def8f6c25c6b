import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formKey } from '../../reward/anchor.js';
import { canonicalOutputs, score, unverifiable } from '../../reward/index.js';
import { RULES } from '../../reward/rules.js';

// The reward's rules as properties (issue 29): for references generated in each class of
// biology's notation, every canonical form and every other accepted spelling scores 1, and a
// hedge (two answers, a list, a negation, an empty box) scores 0. The same classes run under
// hypothesis in clients/python/tests/test_reward.py.

/** A reference and the other ways a correct output may write it. */
interface Written {
  readonly reference: string;
  readonly spellings: readonly string[];
}

const TABLE_WORDS = new Set([
  ...RULES.fillers,
  ...RULES.negators,
  ...RULES.continuations,
  ...RULES.heads,
  ...RULES.listWords,
  ...RULES.clauseWords,
  ...RULES.unitWords,
]);
const lower = (min: number, max: number) =>
  fc
    .string({ unit: fc.constantFrom(...'abcdefghiklmnoprstuvy'), minLength: min, maxLength: max })
    .filter((w) => !TABLE_WORDS.has(w));

const KNOWN_BINOMIALS = [...RULES.binomials];
const binomial = fc.oneof(
  fc
    .tuple(fc.constantFrom(...'ABCDEFGHKLMPSTVY'), lower(4, 9), lower(4, 9))
    .map(([initial, genusRest, species]) => {
      const full = `${initial}${genusRest} ${species}`;
      return { reference: full, spellings: [`${initial}. ${species}`, `_${full}_`] } as Written;
    }),
  // An abbreviation is written out only where the rules' table knows the genus: another genus may
  // share the initial (Escherichia and Entamoeba coli).
  fc.tuple(fc.constantFrom(...'ABCDEFGHKLMPSTVY'), lower(4, 9)).map(([initial, species]): Written => {
    const short = `${initial}. ${species}`;
    return { reference: short, spellings: [`${initial}.${species}`, `*${short}*`] };
  }),
  fc.constantFrom(...KNOWN_BINOMIALS).map(
    ([short, full]): Written => ({
      reference: short,
      spellings: [full, short.replace('. ', '.'), `*${full}*`],
    }),
  ),
);

const locants = fc
  .tuple(
    fc.integer({ min: 1, max: 9 }),
    fc.integer({ min: 2, max: 30 }),
    fc.constantFrom('dihydroxyvitamin D3', 'bisphosphoglycerate', 'dichlorophenol', 'diaminopimelate'),
  )
  .map(([a, b, stem]): Written => ({ reference: `${a},${b}-${stem}`, spellings: [`${a},${b}-${stem}.`] }));

const ion = fc
  .tuple(
    fc.constantFrom('Ca', 'Mg', 'Na', 'K', 'Fe', 'Zn', 'Cu', 'Mn', 'Cl'),
    fc.constantFrom('', '2', '3'),
    fc.constantFrom('+', '-'),
  )
  .map(([element, charge, sign]): Written => {
    const sup = `${charge.replace('2', '²').replace('3', '³')}${sign === '+' ? '⁺' : '⁻'}`;
    return {
      reference: `${element}${charge}${sign}`,
      spellings: [`${element}${sup}`, `${element}^{${charge}${sign}}`],
    };
  });

const marker = fc
  .tuple(fc.integer({ min: 1, max: 300 }), fc.constantFrom('T cells', 'cells', ''))
  .map(([n, cells]): Written => {
    const reference = `CD${n}+${cells ? ` ${cells}` : ''}`;
    return { reference, spellings: [`CD${n}⁺${cells ? ` ${cells}` : ''}`, `**${reference}**`] };
  });

const prime = fc
  .tuple(
    fc.constantFrom('3', '5'),
    fc.constantFrom('UTR', 'cap', 'end', 'splice site'),
    fc.constantFrom("'", '′'),
  )
  .map(
    ([end, what, mark]): Written => ({
      reference: `${end}${mark} ${what}`,
      spellings: [`${end}${mark === "'" ? '′' : "'"} ${what}`, `${end}'-${what}`],
    }),
  );

const GREEK = [
  ['α', 'alpha', 'a'],
  ['β', 'beta', 'b'],
  ['γ', 'gamma', 'g'],
  ['κ', 'kappa', 'k'],
  ['δ', 'delta', 'd'],
] as const;
const greek = fc
  .tuple(
    fc.constantFrom('NF-', 'TNF-', 'IL-1', 'TGF-', 'HIF-1', 'PPAR', 'ER'),
    fc.constantFrom(...GREEK),
    fc.boolean(),
  )
  .map(([name, [letter, spelled, lookalike], spelledReference]): Written => {
    const suffix = name === 'NF-' ? 'B' : '';
    const withLetter = `${name}${letter}${suffix}`;
    const withName = `${name}${spelled}${suffix}`;
    const spellings = [spelledReference ? withLetter : withName];
    // A look-alike Latin letter stands for a Greek one only right after a hyphen or a digit.
    if (/[-0-9]$/.test(name)) spellings.push(`${name}${lookalike}${suffix}`);
    return { reference: spelledReference ? withName : withLetter, spellings };
  });

const NUMBERS = [
  ['mitochondrion', 'mitochondria'],
  ['nucleus', 'nuclei'],
  ['bacterium', 'bacteria'],
  ['cilium', 'cilia'],
  ['flagellum', 'flagella'],
  ['larva', 'larvae'],
  ['vertebra', 'vertebrae'],
  ['mouse', 'mice'],
  ['matrix', 'matrices'],
  ['cortex', 'cortices'],
  ['kinase', 'kinases'],
  ['colony', 'colonies'],
] as const;
const plural = fc
  .tuple(fc.constantFrom(...NUMBERS), fc.boolean())
  .map(
    ([[one, many], singular]): Written =>
      singular ? { reference: one, spellings: [many] } : { reference: many, spellings: [one] },
  );

/**
 * One seed, so CI gives every run the same cases (a failure there is not a coin toss); FC_SEED
 * explores others, as a session does before it changes the rules (FC_SEED=$RANDOM npx vitest ...).
 */
const RUNS = { numRuns: 150, seed: Number(process.env.FC_SEED ?? 29) };

const CLASSES = { binomial, locants, ion, marker, prime, greek, plural } as const;

const pays = (reference: string, output: string) =>
  score({ kind: 'free-form', ground_truth: reference, output });

describe.each(Object.entries(CLASSES))('the reward on %s references', (_name, written) => {
  it('pays every canonical form and every accepted spelling, and grade would accept the reference', () => {
    fc.assert(
      fc.property(written, ({ reference, spellings }) => {
        expect(unverifiable({ kind: 'free-form', ground_truth: reference })).toBeNull();
        for (const output of [...canonicalOutputs(reference), ...spellings.flatMap(canonicalOutputs)])
          expect(pays(reference, output), output).toMatchObject({ score: 1 });
      }),
      RUNS,
    );
  });

  it('pays nothing for a hedge, a list, a negation or an empty box', () => {
    fc.assert(
      fc.property(written, written, (a, b) => {
        fc.pre(formKey(a.reference) !== formKey(b.reference));
        fc.pre(!b.spellings.some((s) => formKey(s) === formKey(a.reference)));
        for (const output of [
          `Answer: ${a.reference} or ${b.reference}`,
          `Answer: ${b.reference} or ${a.reference}`,
          `Answer: ${a.reference}, ${b.reference}`,
          `\\boxed{${a.reference}} \\boxed{${b.reference}}`,
          `Answer: not ${a.reference}`,
          `It is not ${a.reference}.`,
          '\\boxed{}',
        ])
          expect(pays(a.reference, output), output).toMatchObject({ score: 0 });
      }),
      RUNS,
    );
  });
});

describe('the reward on options written in notation', () => {
  it("pays the key's text and only it; two options named pay nothing", () => {
    const options = fc.uniqueArray(fc.oneof(...Object.values(CLASSES)), {
      minLength: 4,
      maxLength: 5,
      selector: (w) => formKey(w.reference),
    });
    fc.assert(
      fc.property(options, fc.nat(), fc.nat(), (written, key, other) => {
        const texts = written.map((w) => w.reference);
        // Options that contain one another are refused by grade's duplicate and answer checks.
        fc.pre(texts.every((t, i) => texts.every((u, j) => i === j || !formKey(u).includes(formKey(t)))));
        const k = key % texts.length;
        const o = (k + 1 + (other % (texts.length - 1))) % texts.length;
        const letter = 'ABCDE'[k]!;
        const mcq = (output: string) => score({ kind: 'mcq', ground_truth: letter, options: texts, output });
        expect(unverifiable({ kind: 'mcq', ground_truth: letter, options: texts })).toBeNull();
        expect(mcq(`Answer: ${texts[k]}`).score, texts[k]).toBe(1);
        expect(mcq(`The answer is ${texts[o]}.`).score, texts[o]).toBe(0);
        expect(mcq(`Answer: ${texts[k]} or ${texts[o]}`).score).toBe(0);
      }),
      RUNS,
    );
  });
});
