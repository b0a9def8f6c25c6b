import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptRule } from '../../llm/prompts/judge.js';
import { classifyProcessor } from '../../processors/classify.js';
import { dedupBandsProcessor } from '../../processors/dedup/bands.js';
import { dedupJoinProcessor } from '../../processors/dedup/join.js';
import { gradeProcessor } from '../../processors/grade.js';
import { Config, formatIssues } from '../../schemas/config.js';
import type { ClassifiedQa, GradedQa, QaCandidate } from '../../schemas/qa.js';
import { loadTaxonomy } from '../../schemas/taxonomy.js';
import { TestDriver } from '../../topology/test-driver.js';
import { defineTopology } from '../../topology/topology.js';
import { acceptingJudgeReply, testProvenance } from '../fixtures/records.js';
import { type Rig, rig } from '../llm/helpers.js';
import type { ChatRequest } from '../llm-server/server.js';

const TITLE = 'Okazaki fragments and the lagging strand of bacterial DNA replication';

const candidate = (
  id: string,
  question: string,
  answer: string,
  passageText = 'Some text.',
): QaCandidate => ({
  id,
  articleId: 'doi:10.1/x',
  articleTitle: TITLE,
  passage: { sectionIndex: -1, start: 0, end: passageText.length, text: passageText },
  kind: 'free-form',
  question,
  answer,
  rationale: '',
  provenance: testProvenance,
  generatedBy: { model: 'm', promptVersion: 'freeform-v1' },
});

const TOPICS = [
  { name: 'qa.candidates', partitions: 2, schema: 'qa-candidate' as const },
  { name: 'qa.bands', partitions: 2, schema: 'qa-band' as const },
  { name: 'qa.band-verdicts', partitions: 2, schema: 'band-verdict' as const },
  { name: 'qa.graded', partitions: 2, schema: 'graded-qa' as const },
  { name: 'qa.rejected', partitions: 2, schema: 'graded-qa' as const },
  { name: 'qa.withdrawn', partitions: 2, schema: 'qa-withdrawal' as const },
  { name: 'qa.classified', partitions: 2, schema: 'classified-qa' as const },
  { name: 'dlq', partitions: 1, schema: 'dead-letter' as const },
];

/** The judge's reply for each question (by its text), the accepting fixture for any other. */
const judgeReplies = new Map<string, object>();
/** The classifier's labels for each question. */
const classifyReplies = new Map<string, object>();
const judged: ChatRequest[] = [];

const questionOf = (request: ChatRequest) =>
  String(request.messages.at(-1)?.content ?? '').match(/Question: (.*)/)?.[1] ?? '';

let llm: Rig;
beforeAll(async () => {
  llm = await rig(
    {},
    {},
    {
      responder: (request) => {
        const stage = request.response_format?.json_schema?.name;
        const question = questionOf(request);
        if (stage === 'classify') return JSON.stringify(classifyReplies.get(question));
        judged.push(request);
        return JSON.stringify(judgeReplies.get(question) ?? acceptingJudgeReply);
      },
    },
  );
});
afterAll(async () => {
  await llm.close();
});

async function grade(candidates: QaCandidate[], config: unknown = {}) {
  const settings = Config.parse({ grade: config }).grade;
  // Grade, then the band owners and the join that refuse duplicates (processors/dedup/).
  const d = await TestDriver.create(
    defineTopology({
      topics: TOPICS,
      processors: [
        gradeProcessor({ llm: llm.llm, inFlight: 4, ...settings, registry: llm.registry }),
        dedupBandsProcessor({ threshold: settings.nearDuplicate }),
        dedupJoinProcessor(),
      ],
    }),
  );
  try {
    // One key, so the candidates are graded in the order given (one partition).
    await d.pipe(
      'qa.candidates',
      candidates.map((c) => ({ key: 'k', value: c })),
    );
    await d.drain();
    return {
      graded: await d.values<GradedQa>('qa.graded'),
      rejected: await d.values<GradedQa>('qa.rejected'),
      dlq: await d.values('dlq'),
    };
  } finally {
    await d.close();
  }
}

const codesById = (rejected: GradedQa[]) =>
  Object.fromEntries(rejected.map((r) => [r.candidate.id, r.grade.codes]));

describe('grade applies grade.accept to the judge scores, whatever the verdict', () => {
  it('rejects scores under a minimum and verdicts that contradict the scores, each with its code', async () => {
    // Distinct questions: near-duplicates of one another would be refused as such.
    const questions = [
      'Which enzyme joins the Okazaki fragments of the lagging strand?',
      'Which protein clamps DNA polymerase III to the template strand?',
      'Which enzyme removes the RNA primers from Okazaki fragments in bacteria?',
      'Which helicase unwinds the parental duplex ahead of the replication fork?',
      'Which enzyme relieves the supercoiling that builds up ahead of the fork?',
      'Which protein coats single-stranded DNA exposed at the replication fork?',
    ];
    const q = (n: number) => questions[n - 1]!;
    const reply = (over: object) => ({ ...acceptingJudgeReply, ...over });
    judgeReplies.set(q(1), reply({}));
    judgeReplies.set(q(2), reply({ quality: 2 }));
    judgeReplies.set(q(3), reply({ verdict: 'reject', reasons: ['the key looks wrong'] }));
    judgeReplies.set(q(4), reply({ verdict: 'reject', answerability: 1, verifiability: 2 }));
    judgeReplies.set(q(5), reply({ difficulty: 1 }));
    judgeReplies.set(q(6), reply({ quality: 3, answerability: 3, verifiability: 3, difficulty: 2 }));
    const before = judged.length;
    const { graded, rejected, dlq } = await grade(
      [1, 2, 3, 4, 5, 6].map((n) => candidate(`c${n}`, q(n), `ligase ${n}`)),
      { accept: { difficulty: 2 } },
    );
    expect(dlq).toEqual([]);
    expect(graded.map((g) => g.candidate.id).sort()).toEqual(['c1', 'c6']);
    for (const g of graded) expect(g.grade).toMatchObject({ verdict: 'accept', codes: [] });
    expect(codesById(rejected)).toEqual({
      c2: ['low-quality', 'judge-inconsistent'],
      c3: ['judge-inconsistent'],
      c4: ['low-answerability', 'low-verifiability'],
      c5: ['low-difficulty', 'judge-inconsistent'],
    });
    const c3 = rejected.find((r) => r.candidate.id === 'c3')!.grade;
    expect(c3.verdict).toBe('reject');
    expect(c3.reasons).toEqual([
      'judge-inconsistent: the judge rejected with every score at or above its minimum',
      'judge: the key looks wrong',
    ]);
    expect(rejected.find((r) => r.candidate.id === 'c2')!.grade.reasons[0]).toBe(
      'low-quality: quality 2 of 5, under grade.accept.quality 3',
    );
    // The judge was told the same rule, from the same numbers.
    const prompts = judged.slice(before).map((r) => String(r.messages[0]!.content));
    expect(prompts).toHaveLength(6);
    for (const p of prompts)
      expect(p).toContain(
        'Accept when all of these hold: quality, answerability and verifiability are each at least 3; difficulty is at least 2. Otherwise reject.',
      );
  });

  it('words the default rule as the prompt always said it, and counts rejections per code on /metrics', async () => {
    expect(acceptRule(Config.parse({}).grade.accept)).toBe(
      'Accept when quality, answerability and verifiability are each at least 3; otherwise reject.',
    );
    expect(acceptRule({ quality: 1, answerability: 1, verifiability: 1, difficulty: null })).toBe(
      'Accept whatever the scores: no minimum is set.',
    );
    const counted = async (code: string) => llm.metric('bioalchemy_grade_rejections_total', { code });
    const [inconsistent, quality] = [await counted('judge-inconsistent'), await counted('low-quality')];
    const q = 'Which polymerase fills the gaps left by RNA primers on the lagging strand?';
    judgeReplies.set(q, { ...acceptingJudgeReply, quality: 1 });
    const { rejected } = await grade([candidate('m1', q, 'DNA polymerase I')]);
    expect(codesById(rejected)).toEqual({ m1: ['low-quality', 'judge-inconsistent'] });
    expect(await counted('judge-inconsistent')).toBe(inconsistent + 1);
    expect(await counted('low-quality')).toBe(quality + 1);
  });

  it('refuses a config whose minimums are out of 1-5, naming the field', () => {
    for (const [accept, field] of [
      [{ quality: 6 }, 'grade.accept.quality'],
      [{ verifiability: 0 }, 'grade.accept.verifiability'],
      [{ difficulty: 2.5 }, 'grade.accept.difficulty'],
      [{ answerability: '3' }, 'grade.accept.answerability'],
    ] as const) {
      const parsed = Config.safeParse({ grade: { accept } });
      expect(parsed.success).toBe(false);
      expect(formatIssues(parsed.error!)).toBe(`${field}: an integer from 1 to 5, on the judge's scale`);
    }
    expect(Config.safeParse({ grade: { accept: { qualty: 3 } } }).success).toBe(false);
    expect(Config.safeParse({ classify: { minConfidence: 1.5 } }).success).toBe(false);
  });
});

describe('grade: checks and duplicates', () => {
  it('refuses a copied title with a yes/no answer by the checks alone, without a judge call', async () => {
    const before = judged.length;
    const { graded, rejected } = await grade([candidate('t1', TITLE, 'Yes')]);
    expect(graded).toEqual([]);
    expect(judged.length).toBe(before);
    expect(rejected[0]!.grade).toMatchObject({
      verdict: 'reject',
      codes: ['copied-text', 'not-a-question', 'yes-no-answer'],
      gradedBy: { model: 'deterministic-checks' },
    });
    expect(rejected[0]!.grade.reasons[0]).toBe("copied-text: question is the article's title");
  });

  it('rejects the same candidate again, and exact and near-duplicate questions, naming the id they repeat', async () => {
    const q =
      'Which kinase phosphorylates the retinoblastoma protein at the G1 to S phase transition in mammalian cells?';
    const first = candidate('d1', q, 'CDK4');
    const { graded, rejected, dlq } = await grade([
      first,
      first,
      candidate('d2', q.toUpperCase(), 'CDK4', 'Other text.'),
      candidate('d3', q.replace('mammalian cells', 'mammalian cell lines'), 'CDK4', 'More text.'),
      candidate(
        'd4',
        'Which transporter moves glucose into intestinal epithelial cells with sodium?',
        'SGLT1',
      ),
    ]);
    // No dead letter: a duplicate is a rejection an operator need not look at.
    expect(dlq).toEqual([]);
    expect(graded.map((g) => g.candidate.id).sort()).toEqual(['d1', 'd4']);
    const byId = (a: GradedQa, b: GradedQa) => a.candidate.id.localeCompare(b.candidate.id);
    expect(rejected.sort(byId).map((r) => [r.candidate.id, r.grade.codes, r.grade.duplicateOf])).toEqual([
      ['d1', ['duplicate'], 'd1'],
      ['d2', ['duplicate'], 'd1'],
      ['d3', ['near-duplicate'], 'd1'],
    ]);
    expect(rejected[0]!.grade.reasons).toEqual([
      'duplicate: candidate d1 again (same article id, passage text and question), graded before and accepted',
    ]);
    expect(rejected[1]!.grade.reasons).toEqual(['duplicate: the same question as d1']);
  });
});

describe('classify drops labels under classify.minConfidence', () => {
  it('keeps confident labels, and emits a QA left without one as unlabelled', async () => {
    const taxonomy = loadTaxonomy();
    const settings = Config.parse({}).classify;
    expect(settings.minConfidence).toBe(0.5);
    const d = await TestDriver.forProcessor(
      classifyProcessor({ llm: llm.llm, inFlight: 4, taxonomy, ...settings }),
      TOPICS,
    );
    try {
      const labelled = 'Which enzyme joins the Okazaki fragments in bacteria?';
      const unlabelled = 'Which species of kelp forest urchin declines after sea otters return?';
      classifyReplies.set(labelled, {
        labels: [
          { category: 'genetics', confidence: 0.3 },
          { category: 'molecular-biology', confidence: 0.5 },
          { category: 'microbiology', confidence: 0.8 },
        ],
      });
      classifyReplies.set(unlabelled, {
        labels: [
          { category: 'ecology', confidence: 0.49 },
          { category: 'zoology', confidence: 0.1 },
        ],
      });
      const accepted = (c: QaCandidate): GradedQa => ({
        candidate: c,
        grade: {
          scores: { quality: 0.75, difficulty: 0.5, answerability: 0.75, verifiability: 1 },
          verdict: 'accept',
          reasons: [],
          codes: [],
          gradedBy: { model: 'm', promptVersion: 'freeform-grade-v3' },
        },
      });
      await d.pipe('qa.graded', [
        { key: 'a', value: accepted(candidate('l1', labelled, 'DNA ligase')) },
        { key: 'a', value: accepted(candidate('u1', unlabelled, 'Purple urchin')) },
      ]);
      await d.drain();
      const out = (await d.values<ClassifiedQa>('qa.classified')).sort((a, b) =>
        a.candidate.id.localeCompare(b.candidate.id),
      );
      expect(await d.values('dlq')).toEqual([]);
      expect(out.map((c) => [c.candidate.id, c.classification.labels])).toEqual([
        [
          'l1',
          [
            { category: 'molecular-biology', confidence: 0.5 },
            { category: 'microbiology', confidence: 0.8 },
          ],
        ],
        ['u1', []],
      ]);
    } finally {
      await d.close();
    }
  });
});
