import { describe, expect, it } from 'vitest';
import { deterministicChecks } from '../../processors/qa/checks.js';
import { looksEnglish } from '../../processors/qa/language.js';
import { NearDuplicateIndex, SignatureCache } from '../../processors/qa/near-duplicates.js';
import type { QaCandidate } from '../../schemas/qa.js';
import { normaliseText } from '../../sources/minhash.js';
import type { StateStore } from '../../topology/processor.js';
import { testProvenance } from '../fixtures/records.js';

const base = {
  id: 'q1',
  articleId: 'doi:10.1/x',
  passage: { sectionIndex: -1, start: 0, end: 10, text: 'Some text.' },
  rationale: '',
  provenance: testProvenance,
  generatedBy: { model: 'm', promptVersion: 'mcq-v1' },
};
const mcq = (over: Partial<Extract<QaCandidate, { kind: 'multiple-choice' }>> = {}): QaCandidate => ({
  ...base,
  kind: 'multiple-choice',
  question: 'Which organelle produces most of the ATP in aerobic eukaryotic cells?',
  articleTitle: 'Mitochondria and the energy budget of the eukaryotic cell',
  options: ['Mitochondrion', 'Golgi apparatus', 'Lysosome', 'Peroxisome'],
  answer: 'A',
  ...over,
});
const free = (question: string, answer: string): QaCandidate => ({
  ...base,
  articleTitle: 'Mitochondria and the energy budget of the eukaryotic cell',
  kind: 'free-form',
  question,
  answer,
});
const checks = (c: QaCandidate, opts = { allowYesNo: false }) =>
  deterministicChecks(c, opts).map((f) => f.code);

describe('deterministic QA checks', () => {
  it('passes answers in biology notation, which the reward verifies', () => {
    const q = 'Which organism was engineered to secrete the enzyme at industrial scale?';
    for (const answer of [
      'E. coli',
      '1,25-dihydroxyvitamin D3',
      'CD4+ T cells',
      "3' UTR",
      'NF-κB',
      'Na+/K+-ATPase',
    ])
      expect(checks(free(q, answer)), answer).toEqual([]);
  });

  it('refuses a reference the reward cannot verify, and one that carries the prompt markers', () => {
    const q = 'Which organism was engineered to secrete the enzyme at industrial scale?';
    expect(checks(free(q, '???'))).toEqual(['unverifiable-answer']);
    expect(checks(free(q, 'pre-mRNA </think>'))).toEqual(['unverifiable-answer']);
    const why = deterministicChecks(free(q, '???'), { allowYesNo: false })[0]!.reason;
    expect(why).toContain('Answer: ???');
    expect(checks(free(q, '<<<ARTICLE_TEXT E. coli'))).toEqual(['prompt-marker']);
    expect(checks(free(`${q} ARTICLE_TEXT>>>`, 'E. coli'))).toEqual(['prompt-marker']);
    expect(checks(mcq({ options: ['Mitochondrion', 'Golgi apparatus', 'Lysosome', 'QA_PAIR'] }))).toEqual([
      'prompt-marker',
    ]);
    expect(checks({ ...mcq(), rationale: 'See <<<ARTICLE_TEXT.' })).toEqual(['prompt-marker']);
  });

  it('passes a good multiple-choice and free-form question', () => {
    expect(checks(mcq())).toEqual([]);
    expect(
      checks(free('Which enzyme joins Okazaki fragments during DNA replication?', 'DNA ligase')),
    ).toEqual([]);
  });

  it('refuses each failure with its own code', () => {
    expect(checks(mcq({ options: ['Mitochondrion', 'Lysosome', 'Peroxisome'] }))).toEqual(['option-count']);
    expect(checks(mcq({ options: ['Mitochondrion', 'mitochondrion.', 'Lysosome', 'Peroxisome'] }))).toEqual([
      'duplicate-options',
    ]);
    expect(checks(mcq({ answer: 'E' }))).toEqual(['answer-key']);
    expect(
      checks(mcq({ options: ['Mitochondrion', 'Golgi apparatus', 'Lysosome', 'All of the above'] })),
    ).toEqual(['ambiguous-option']);
    expect(
      checks(mcq({ question: 'Is the mitochondrion the organelle that produces most of the ATP in cells?' })),
    ).toEqual(['answer-in-question']);
    expect(checks(mcq({ question: 'Which organelle?' }))).toEqual(['question-length']);
    expect(checks(mcq({ options: ['Mitochondrion', 'Golgi', 'Lysosome', 'x'.repeat(301)] }))).toEqual([
      'option-length',
    ]);
    expect(
      checks(mcq({ question: 'In this study, which organelle produced most of the ATP in the cells?' })),
    ).toEqual(['self-contained']);
    expect(
      checks(mcq({ question: 'Which organelle is labelled in Figure 2 as the main source of ATP?' })),
    ).toEqual(['self-contained']);
    expect(
      checks(
        free(
          'Which enzyme joins Okazaki fragments during DNA replication?',
          'an enzyme that seals nicks between Okazaki fragments using ATP or NAD as cofactor in bacteria',
        ),
      ),
    ).toEqual(['answer-length']);
    expect(
      checks(free('Which enzyme, DNA ligase or helicase, joins Okazaki fragments?', 'DNA ligase')),
    ).toEqual(['answer-in-question']);
    expect(
      checks(
        free(
          "Quelle enzyme relie les fragments d'Okazaki pendant la réplication de l'ADN dans la cellule ?",
          'ADN ligase',
        ),
      ),
    ).toEqual(['not-english']);
  });

  it("refuses non-questions: the article's title or a passage sentence copied, no interrogative form", () => {
    // The README's opening run accepted exactly this: the title as the question, "Yes" as the answer.
    expect(checks(free('Mitochondria and the energy budget of the eukaryotic cell', 'Yes'))).toEqual([
      'copied-text',
      'not-a-question',
      'yes-no-answer',
    ]);
    // The title with a question mark is still the title.
    expect(checks(free('Mitochondria and the energy budget of the eukaryotic cell?', 'ATP'))).toEqual([
      'copied-text',
    ]);
    const passage = {
      sectionIndex: 0,
      start: 0,
      end: 120,
      text: 'Cells need energy. Most ATP in aerobic eukaryotic cells is made by oxidative phosphorylation. It needs oxygen.',
    };
    expect(
      checks({
        ...free('Most ATP in aerobic eukaryotic cells is made by oxidative phosphorylation.', 'ATP synthase'),
        passage,
      }),
    ).toEqual(['copied-text', 'not-a-question']);
    expect(
      checks(free('The enzyme that joins Okazaki fragments during DNA replication', 'DNA ligase')),
    ).toEqual(['not-a-question']);
    // Questions without a question mark, and cloze stems, are questions.
    expect(
      checks(free('Name the enzyme that joins Okazaki fragments during DNA replication', 'DNA ligase')),
    ).toEqual([]);
    expect(
      checks(mcq({ question: 'Most of the ATP of aerobic eukaryotic cells is made in the ____.' })),
    ).toEqual([]);
    // An old record without a title is not its own title.
    expect(
      checks({
        ...free('Which enzyme joins Okazaki fragments during DNA replication?', 'DNA ligase'),
        articleTitle: '',
      }),
    ).toEqual([]);
  });

  it('refuses a yes/no or true/false free-form answer unless grade.allowYesNo', () => {
    const q = 'Does DNA ligase join Okazaki fragments during replication in bacteria?';
    for (const answer of ['Yes', 'no.', 'TRUE', 'False', 'Yes, it does'])
      expect(checks(free(q, answer)), answer).toEqual(['yes-no-answer']);
    expect(checks(free(q, 'Yes'), { allowYesNo: true })).toEqual([]);
    // Words that only start like one are answers.
    expect(
      checks(free('What change in ATP output follows the loss of complex I in neurons?', 'None')),
    ).toEqual([]);
    expect(
      checks(free('What change in ATP output follows the loss of complex I in neurons?', 'No change')),
    ).toEqual([]);
  });
});

describe('language', () => {
  it('tells English from other languages, and gives lists of terms the benefit of the doubt', () => {
    expect(
      looksEnglish('The mitochondrion is the site of oxidative phosphorylation in most eukaryotic cells.'),
    ).toBe(true);
    expect(
      looksEnglish(
        'Drought enriched three gene families: polyketide synthases; osmolyte transporters; spore coat proteins.',
      ),
    ).toBe(true);
    expect(
      looksEnglish(
        'Die Mitochondrien sind der Ort der oxidativen Phosphorylierung in den meisten eukaryotischen Zellen und werden vererbt.',
      ),
    ).toBe(false);
    expect(looksEnglish('线粒体是大多数真核细胞中氧化磷酸化的场所，也是细胞的能量工厂。')).toBe(false);
  });
});

class MapStore implements StateStore {
  readonly map = new Map<string, unknown>();
  reads = 0;
  get<T>(key: string) {
    this.reads++;
    return this.map.get(key) as T | undefined;
  }
  put(key: string, value: unknown) {
    this.map.set(key, value);
  }
  delete(key: string) {
    this.map.delete(key);
  }
}

describe('near-duplicate index', () => {
  it('finds exact duplicates after normalisation and near-duplicates by MinHash, not different questions', () => {
    const index = new NearDuplicateIndex(new MapStore(), 0.7);
    const q =
      'Which kinase phosphorylates the retinoblastoma protein at the G1 to S phase transition in mammalian cells?';
    expect(index.check('a', q)).toBeNull();
    expect(index.check('b', q.toUpperCase().replace('?', ' ?'))).toMatchObject({ kind: 'exact', of: 'a' });
    expect(index.check('c', q.replace('mammalian cells', 'mammalian cell lines'))).toMatchObject({
      kind: 'near',
      of: 'a',
    });
    expect(
      index.check(
        'd',
        'Which transporter moves glucose into intestinal epithelial cells together with sodium ions?',
      ),
    ).toBeNull();
    // The same id checked again (a replay) is not its own duplicate.
    expect(index.check('a', q)).toBeNull();
    expect(normaliseText('  What is  X? ')).toBe('what is x');
  });

  // One template, two words changed per question: most of their bands are shared by many others.
  const words = Array.from({ length: 400 }, (_, i) => `term${i.toString(36)}`);
  const question = (i: number) =>
    `Which term is most closely associated with ${words[i]} when the role of ${words[(i * 7 + 3) % 400]} is considered in the study of cells?`;

  it('reads no more of the store per check as questions of one template pile up, and still finds an old near-duplicate', () => {
    const store = new MapStore();
    const index = new NearDuplicateIndex(store, 0.8);
    const readsOf = (i: number) => {
      const before = store.reads;
      index.check(`q${i}`, question(i));
      return store.reads - before;
    };
    for (let i = 0; i < 100; i++) readsOf(i);
    const early = Math.max(...Array.from({ length: 20 }, (_, k) => readsOf(100 + k)));
    for (let i = 120; i < 380; i++) readsOf(i);
    const late = Math.max(...Array.from({ length: 20 }, (_, k) => readsOf(380 + k)));
    // The id's order and the count of ids (the one-process index's own), the exact key, the bands
    // and at most a band's members each.
    expect(late).toBeLessThanOrEqual(2 + 1 + 16 + 16 * 16);
    expect(late).toBeLessThanOrEqual(early * 1.5);
    for (const [key, ids] of store.map)
      if (key.startsWith('band:')) expect((ids as string[]).length).toBeLessThanOrEqual(16);
    // The first question, long since pushed out of its crowded bands, is still found by the others.
    expect(index.check('again', `${question(0)} `.replace('cells?', 'cells ?'))).toMatchObject({ of: 'q0' });
    expect(
      index.check('near', question(0).replace('in the study of cells', 'in the study of living cells')),
    ).toMatchObject({ kind: 'near', of: 'q0' });
  });

  it('with a signature cache, reads only the order, the exact key and the bands per check, and decides the same', () => {
    const plain = new NearDuplicateIndex(new MapStore(), 0.8);
    const store = new MapStore();
    const cached = new NearDuplicateIndex(store, 0.8, new SignatureCache());
    for (let i = 0; i < 400; i++) {
      const q = i % 10 === 9 ? question(i - 1).replace('of cells', 'of living cells') : question(i);
      const before = store.reads;
      expect(cached.check(`q${i}`, q)).toEqual(plain.check(`q${i}`, q));
      expect(store.reads - before).toBe(2 + 1 + 16);
    }
  });
});
