import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dedupBandsProcessor } from '../../processors/dedup/bands.js';
import { dedupJoinProcessor } from '../../processors/dedup/join.js';
import { dedupOrder, questionBands } from '../../processors/qa/near-duplicates.js';
import type { QaBand, QaWithdrawal } from '../../schemas/dedup.js';
import type { GradedQa } from '../../schemas/qa.js';
import { similarity } from '../../sources/minhash.js';
import { TestDriver } from '../../topology/test-driver.js';
import { defineTopology } from '../../topology/topology.js';
import { testProvenance } from '../fixtures/records.js';

// Issue 30: of a group of duplicate questions the same one is kept whatever order they reach the
// band owners in and however many partitions the owners have. The rule (BandOwner): a question is
// a duplicate when a band it shares holds a near-duplicate that comes before it in dedupOrder
// (earliest publication, then id); one that arrives after it was accepted is withdrawn.

const THRESHOLD = 0.8;

interface Question {
  readonly id: string;
  readonly text: string;
  readonly published: string | null;
}

const BASES = [
  'Which kinase phosphorylates the retinoblastoma protein at the G1 to S phase transition in dividing mammalian cells',
  'Which transporter moves glucose into intestinal epithelial cells together with sodium ions across the apical membrane',
  'Which enzyme joins the Okazaki fragments of the lagging strand during replication of bacterial chromosomal DNA',
];
// Each step adds a word at the end: neighbours are near-duplicates (about 0.9), the ends of a
// longer chain may not be, so chains of duplicates are in the cases too.
const TAILS = ['', ' today', ' today here', ' today here now', ' today here now again'];
const DATES = [null, '2019', '2020-05', '2020-05-01', '2021-01-01'];

const questionArb = fc.record({
  base: fc.integer({ min: 0, max: BASES.length - 1 }),
  tail: fc.integer({ min: 0, max: TAILS.length - 1 }),
  upper: fc.boolean(),
  date: fc.integer({ min: 0, max: DATES.length - 1 }),
});

const casesArb = fc
  .array(questionArb, { minLength: 2, maxLength: 9 })
  .map((qs) =>
    qs.map((q, i): Question => {
      const text = `${BASES[q.base]}${TAILS[q.tail]}?`;
      return { id: `qa-${i}`, text: q.upper ? text.toUpperCase() : text, published: DATES[q.date]! };
    }),
  )
  .chain((questions) => {
    const records = (q: Question) => questionBands(q.text).bands.map((_, b) => [q.id, b] as const);
    const all = questions.flatMap(records);
    return fc.record({
      questions: fc.constant(questions),
      // The order band records reach the log in: question by question (as grade writes them) in
      // any order of questions, or every record anywhere.
      arrival: fc.oneof(
        fc.shuffledSubarray(questions, { minLength: questions.length }).map((qs) => qs.flatMap(records)),
        fc.shuffledSubarray(all, { minLength: all.length }),
      ),
      partitions: fc.integer({ min: 1, max: 3 }),
      step: fc.integer({ min: 1, max: 40 }),
    });
  });

/** The rule stated directly: kept are the questions with no duplicate before them in dedupOrder. */
function keptByRule(questions: readonly Question[]): string[] {
  const info = questions.map((q) => {
    const { signature, bands } = questionBands(q.text);
    return { q, signature, keys: new Set(bands.map((b) => b.key)), order: dedupOrder(q.id, q.published) };
  });
  const duplicate = (a: (typeof info)[number], b: (typeof info)[number]) => {
    const exact = [...a.keys].find((k) => k.startsWith('exact:'))!;
    if (b.keys.has(exact)) return true;
    const shared = [...a.keys].some((k) => k.startsWith('band:') && b.keys.has(k));
    return shared && similarity(a.signature, b.signature) >= THRESHOLD;
  };
  return info
    .filter((x) => !info.some((y) => y !== x && y.order < x.order && duplicate(x, y)))
    .map((x) => x.q.id)
    .sort();
}

const graded = (q: Question): GradedQa => ({
  candidate: {
    id: q.id,
    articleId: `article-${q.id}`,
    articleTitle: 'A title',
    passage: { sectionIndex: -1, start: 0, end: 4, text: 'Text' },
    kind: 'free-form',
    question: q.text,
    answer: 'CDK4',
    rationale: '',
    provenance: { ...testProvenance, published: q.published },
    generatedBy: { model: 'm', promptVersion: 'freeform-v1' },
  },
  grade: {
    verdict: 'accept',
    scores: { quality: 1, difficulty: 0.5, answerability: 1, verifiability: 1 },
    reasons: [],
    codes: [],
    gradedBy: { model: 'm', promptVersion: 'judge-v1' },
  },
});

/** The band owners and the join, fed every band record in the given order. */
async function dedup(
  questions: readonly Question[],
  arrival: readonly (readonly [string, number])[],
  partitions: number,
  step = 5,
) {
  const d = await TestDriver.create(
    defineTopology({
      topics: [
        { name: 'qa.bands', partitions, schema: 'qa-band' },
        { name: 'qa.band-verdicts', partitions, schema: 'band-verdict' },
        { name: 'qa.graded', partitions, schema: 'graded-qa' },
        { name: 'qa.rejected', partitions, schema: 'graded-qa' },
        { name: 'qa.withdrawn', partitions, schema: 'qa-withdrawal' },
        { name: 'dlq', partitions: 1, schema: 'dead-letter' },
      ],
      processors: [dedupBandsProcessor({ threshold: THRESHOLD }), dedupJoinProcessor()],
    }),
  );
  try {
    const byId = new Map(questions.map((q) => [q.id, q]));
    const records = arrival.map(([id, b]) => {
      const q = byId.get(id)!;
      const { signature, bands } = questionBands(q.text);
      const band = bands[b]!;
      return {
        key: band.key,
        value: {
          qaId: q.id,
          band: band.band,
          bands: bands.length,
          signature,
          order: dedupOrder(q.id, q.published),
          ...(band.band === 'exact' ? { graded: graded(q) } : {}),
        } satisfies QaBand,
      };
    });
    // Some records a step, so owners and the join interleave as workers would.
    for (let i = 0; i < records.length; i += step) {
      await d.pipe('qa.bands', records.slice(i, i + step));
      await d.drain();
    }
    const accepted = (await d.values<GradedQa>('qa.graded')).map((g) => g.candidate.id);
    const rejected = (await d.values<GradedQa>('qa.rejected')).map((g) => g.candidate.id);
    const withdrawn = (await d.values<QaWithdrawal>('qa.withdrawn')).map((w) => w.qaId);
    return { accepted, rejected, withdrawn };
  } finally {
    await d.close();
  }
}

const RUNS = { numRuns: 60, seed: Number(process.env.FC_SEED ?? 30) };

describe('global dedup keeps the first of each group in dedupOrder, whatever the arrival', () => {
  it('keeps what the rule keeps, for any arrival order and partition count, and each QA ends once', async () => {
    await fc.assert(
      fc.asyncProperty(casesArb, async ({ questions, arrival, partitions, step }) => {
        const { accepted, rejected, withdrawn } = await dedup(questions, arrival, partitions, step);
        const kept = accepted.filter((id) => !withdrawn.includes(id)).sort();
        expect(kept).toEqual(keptByRule(questions));
        // Each QA is decided once, and only an accepted one is withdrawn, once.
        expect([...accepted, ...rejected].sort()).toEqual(questions.map((q) => q.id).sort());
        expect(new Set(withdrawn).size).toBe(withdrawn.length);
        for (const id of withdrawn) expect(accepted).toContain(id);
      }),
      RUNS,
    );
  });

  it('withdraws the accepted QA of a later work when the earlier work asks the same question later', async () => {
    const later: Question = { id: 'qa-later', text: `${BASES[0]}?`, published: '2022-03-01' };
    const earlier: Question = { id: 'qa-earlier', text: `${BASES[0]} today?`, published: '2018-07-01' };
    const order = (first: Question) => questionBands(first.text).bands.map((_, b) => [first.id, b] as const);
    // One question a step: the later work's is decided before the earlier work's arrives.
    const { accepted, rejected, withdrawn } = await dedup(
      [later, earlier],
      [...order(later), ...order(earlier)],
      2,
      17,
    );
    expect(accepted.sort()).toEqual(['qa-earlier', 'qa-later']);
    expect(rejected).toEqual([]);
    expect(withdrawn).toEqual(['qa-later']);
    // The other way round the later work is refused outright: the same one kept, nothing withdrawn.
    const reverse = await dedup([later, earlier], [...order(earlier), ...order(later)], 2, 17);
    expect(reverse).toEqual({ accepted: ['qa-earlier'], rejected: ['qa-later'], withdrawn: [] });
  });
});
