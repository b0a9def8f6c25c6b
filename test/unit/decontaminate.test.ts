import { mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableFromArrays, tableToIPC } from 'apache-arrow';
import * as parquet from 'parquet-wasm/node';
import { type Counter, Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EvalSourceShare, gradeProcessor } from '../../processors/grade.js';
import { EvalIndex, EvalSetError, EvalSets, parseEvalSet } from '../../processors/qa/decontaminate.js';
import { Config } from '../../schemas/config.js';
import type { QaBand } from '../../schemas/dedup.js';
import type { GradedQa, QaCandidate } from '../../schemas/qa.js';
import { TestDriver } from '../../topology/test-driver.js';
import { acceptingJudgeReply, testProvenance } from '../fixtures/records.js';
import { type Rig, rig } from '../llm/helpers.js';

const EVAL_QUESTION =
  'Does the loss of the lagging strand ligase in Escherichia coli slow the joining of Okazaki fragments during replication at high temperature?';

const candidate = (
  id: string,
  question: string,
  over: { articleId?: string; pmid?: string; doi?: string } = {},
): QaCandidate => ({
  id,
  articleId: over.articleId ?? 'doi:10.1/x',
  articleTitle: 'A title',
  passage: { sectionIndex: -1, start: 0, end: 9, text: 'Some text.' },
  kind: 'free-form',
  question,
  answer: 'polymerase',
  rationale: '',
  provenance: {
    ...testProvenance,
    articleId: over.articleId ?? testProvenance.articleId,
    ...(over.pmid ? { pmid: over.pmid } : {}),
    ...(over.doi ? { doi: over.doi } : {}),
  },
  generatedBy: { model: 'm', promptVersion: 'freeform-v1' },
});

const dir = () => mkdtempSync(join(tmpdir(), 'bioalchemy-eval-'));
const jsonl = (items: object[]) => items.map((i) => JSON.stringify(i)).join('\n');

async function indexOf(items: object[], name = 'bench'): Promise<EvalIndex> {
  const index = new EvalIndex(0.8);
  index.add(parseEvalSet(`/x/${name}.jsonl`, Buffer.from(jsonl(items))));
  return index;
}

describe('eval index', () => {
  it('matches a shared 13-gram of question+options, a near-duplicate question, and a source by PMID or DOI', async () => {
    const index = await indexOf([
      { id: 'q1', question: EVAL_QUESTION },
      {
        id: 'q2',
        question: 'Which enzyme?',
        options: {
          A: 'the ligase that seals nicks left between Okazaki fragments on the lagging strand',
          B: 'a helicase',
        },
      },
      {
        id: 'q3',
        question: 'What limits telomerase activity in the somatic cells of adult human tissues?',
        pmid: 12345,
      },
      { id: 'q4', question: 'What drives chromatin loop extrusion?', doi: 'https://doi.org/10.5555/ABC' },
    ]);
    // A 13-gram of the eval question inside a longer question, case and punctuation aside.
    const inside = index.check(
      candidate(
        'a',
        `In a new study, does the LOSS of the lagging strand ligase in Escherichia coli slow the joining of Okazaki fragments?`,
      ),
    );
    expect(inside).toEqual([
      expect.objectContaining({ code: 'contaminated', evalSet: 'bench', itemId: 'q1', how: '13-gram' }),
    ]);
    // Twelve shared words are not enough, and an unrelated question matches nothing.
    expect(
      index.check(
        candidate('b', 'Does the loss of the lagging strand ligase in Escherichia coli stop cells?'),
      ),
    ).toEqual([]);
    // The options count: 13 words of q2's option A in the candidate's options.
    expect(
      index.check({
        ...candidate('c', 'Which protein acts here?'),
        options: ['the ligase that seals nicks left between Okazaki fragments on the lagging strand', 'none'],
      }),
    ).toEqual([expect.objectContaining({ itemId: 'q2', how: '13-gram' })]);
    // A near-duplicate: a word added to a 12-word question (no 13-gram to share).
    expect(
      index.check(
        candidate('d', 'What limits telomerase activity in the somatic cells of adult human tissues today?'),
      ),
    ).toEqual([expect.objectContaining({ code: 'contaminated', itemId: 'q3', how: 'near-duplicate' })]);
    // Sources: the PMID beside a DOI article id, and the DOI as the article id (normalised).
    expect(index.check(candidate('e', 'Unrelated question about yeast?', { pmid: '12345' }))).toEqual([
      expect.objectContaining({ code: 'eval-source', itemId: 'q3', how: 'pmid', evidence: 'pmid:12345' }),
    ]);
    expect(
      index.check(candidate('f', 'Unrelated question about yeast?', { articleId: 'doi:10.5555/abc' })),
    ).toEqual([expect.objectContaining({ code: 'eval-source', itemId: 'q4', how: 'doi' })]);
  });

  it('reads parquet as JSON lines', () => {
    const table = tableFromArrays({ id: ['p1', 'p2'], question: [EVAL_QUESTION, 'Second question here?'] });
    const bytes = parquet.writeParquet(parquet.Table.fromIPCStream(tableToIPC(table, 'stream')));
    const set = parseEvalSet('/x/pq.parquet', Buffer.from(bytes));
    expect(set.items.map((i) => i.id)).toEqual(['p1', 'p2']);
    expect(set.items[0]!.question).toBe(EVAL_QUESTION);
  });

  it('bad input: a file neither JSON lines nor parquet is an error; items without a question are counted, never dropped unsaid', () => {
    expect(() => parseEvalSet('/x/a.csv', Buffer.from('id,question\n1,What?\n'))).toThrow(
      /neither JSON lines .* nor parquet: line 1/,
    );
    expect(() => parseEvalSet('/x/a.json', Buffer.from('[{"id":1,"question":"What?"}]'))).toThrow(
      /a JSON array/,
    );
    expect(() =>
      parseEvalSet('/x/a.jsonl', Buffer.from(jsonl([{ id: 1 }, { id: 2, question: '' }]))),
    ).toThrow(/no item with an id and a question among 2 records/);
    const set = parseEvalSet(
      '/x/a.jsonl',
      Buffer.from(`${jsonl([{ id: 1, question: 'Q?' }, { id: 2 }])}\n{oops\n`),
    );
    expect(set.items).toHaveLength(1);
    expect(set.refused.count).toBe(2);
    expect(set.refused.first.join(' | ')).toMatch(
      /line 2: question: an eval item needs a question \| line 3: not JSON/,
    );
  });

  it('a set over grade.evalSetMaxMb is an error naming its size and the setting', () => {
    const d = dir();
    writeFileSync(join(d, 'big.jsonl'), jsonl([{ id: 1, question: 'x'.repeat(3000) }]));
    expect(() => new EvalSets({ paths: [d], threshold: 0.8, maxBytes: 1000, pollMs: 1 })).toThrow(
      /big.jsonl: 0\.0 MB, over grade.evalSetMaxMb/,
    );
    expect(
      () => new EvalSets({ paths: [join(d, 'missing.jsonl')], threshold: 0.8, maxBytes: 1e6, pollMs: 1 }),
    ).toThrow(EvalSetError);
  });

  it('a set added to the folder, or a file changed, applies to the next check; a broken new version keeps the old one', async () => {
    const d = dir();
    writeFileSync(
      join(d, 'one.jsonl'),
      jsonl([{ id: 'a', question: 'What limits telomerase in somatic cells?' }]),
    );
    // pollMs 0: every current() looks at the files.
    const sets = new EvalSets({ paths: [d], threshold: 0.8, maxBytes: 1e6, pollMs: 0 });
    const q = candidate('x', 'What drives chromatin loop extrusion in mammalian interphase nuclei?');
    expect((await sets.current()).check(q)).toEqual([]);
    writeFileSync(
      join(d, 'two.jsonl'),
      jsonl([{ id: 'b', question: 'What drives chromatin loop extrusion in mammalian interphase nuclei?' }]),
    );
    await expect
      .poll(async () => (await sets.current()).check(q).map((m) => `${m.evalSet}/${m.itemId}`))
      .toEqual(['two/b']);
    // A broken version of two.jsonl: the error is told, and its previous items still apply.
    writeFileSync(join(d, 'two.jsonl'), 'not json');
    utimesSync(join(d, 'two.jsonl'), new Date(), new Date(Date.now() + 5000));
    await expect
      .poll(async () => {
        await sets.current();
        return sets
          .drainNotices()
          .filter((n) => n.level === 'error')
          .map((n) => n.msg)
          .join();
      })
      .toMatch(/two.jsonl: neither JSON lines .*previous version stays in force/);
    expect((await sets.current()).check(q)).toHaveLength(1);
    // Told once: the next looks at the same broken file say nothing more.
    for (let i = 0; i < 3; i++) await sets.current();
    expect(sets.drainNotices()).toEqual([]);
  });

  it('a reload yields to the event loop whenever its slice of time is up, at any size, and indexes every item', async () => {
    // Items of 24 words of their own, so each brings 12 13-grams: 2,000 items need tables many
    // times their first size.
    const items = (set: string) =>
      Array.from({ length: 2000 }, (_, i) => ({
        id: `${set}${i}`,
        question: Array.from({ length: 24 }, (_, k) => `${set}${i}w${k}`).join(' '),
      }));
    const [a, b] = [items('a'), items('b')];
    const d = dir();
    const sets = new EvalSets({ paths: [d], threshold: 0.8, maxBytes: 2 ** 30, pollMs: 0 });
    // Each reading of the clock a millisecond later, as on a machine too loaded for any fixed count
    // of items a slice: the work must yield by the clock. An immediate queued again each turn of
    // the event loop counts the turns that follow some work (the clock was read since the last),
    // so the slices are counted without timing anything, and turns spent waiting on I/O are not.
    let ms = 0;
    const clock = vi.spyOn(performance, 'now').mockImplementation(() => ++ms);
    let turns = 0;
    let counting = true;
    let seen = 0;
    const count = () => {
      if (ms !== seen) turns++;
      seen = ms;
      if (counting) setImmediate(count);
    };
    setImmediate(count);
    try {
      writeFileSync(join(d, 'a.jsonl'), jsonl(a));
      await sets.current();
      const firstLoad = turns;
      // A second set is added to the index in force: its tables grow again, holding the first's keys.
      writeFileSync(join(d, 'b.jsonl'), jsonl(b));
      await sets.current();
      // Counted in items: a reload that yields every few hundred items turns the loop ~10 times.
      expect(firstLoad).toBeGreaterThan(a.length / 4);
      expect(turns - firstLoad).toBeGreaterThan(b.length / 4);
    } finally {
      counting = false;
      clock.mockRestore();
    }
    const index = await sets.current();
    expect(index.size).toBe(4000);
    // One match per code and set, the first found: the item's own 13-gram.
    for (const item of [a[0]!, a[1999]!, b[0]!, b[1234]!])
      expect(
        index.check(candidate('c', item.question)).map((m) => `${m.evalSet}/${m.itemId}/${m.how}`),
      ).toEqual([`${item.id.slice(0, 1)}/${item.id}/13-gram`]);
  });
});

describe('grade with eval sets', () => {
  let llm: Rig;
  const judged: string[] = [];
  beforeAll(async () => {
    llm = await rig(
      {},
      {},
      {
        responder: (request) => {
          judged.push(String(request.messages.at(-1)?.content ?? ''));
          return JSON.stringify(acceptingJudgeReply);
        },
      },
    );
  });
  afterAll(async () => {
    await llm.close();
  });

  it('rejects contaminated and eval-source candidates without a judge call, naming set and item, counted per set', async () => {
    const d = dir();
    writeFileSync(
      join(d, 'pubmedqa.jsonl'),
      jsonl([
        { id: '111', question: EVAL_QUESTION },
        { id: '222', question: 'What limits telomerase in somatic cells?', pmid: '999' },
      ]),
    );
    const settings = Config.parse({ grade: { evalSets: [join(d, 'pubmedqa.jsonl')] } }).grade;
    const registry = new Registry();
    const driver = await TestDriver.forProcessor(
      gradeProcessor({ llm: llm.llm, inFlight: 4, ...settings, registry }),
      [
        { name: 'qa.candidates', partitions: 1, schema: 'qa-candidate' as const },
        { name: 'qa.bands', partitions: 1, schema: 'qa-band' as const },
        { name: 'qa.rejected', partitions: 1, schema: 'graded-qa' as const },
        { name: 'dlq', partitions: 1, schema: 'dead-letter' as const },
      ],
    );
    const before = judged.length;
    try {
      await driver.pipe('qa.candidates', [
        { key: 'k', value: candidate('c1', EVAL_QUESTION) },
        {
          key: 'k',
          value: candidate('c2', 'Which kinase phosphorylates the yeast Rad53 checkpoint protein?', {
            pmid: '999',
          }),
        },
        {
          key: 'k',
          value: candidate('c3', 'Which helicase unwinds the parental duplex ahead of the replication fork?'),
        },
      ]);
      await driver.drain();
      const rejected = await driver.values<GradedQa>('qa.rejected');
      // Accepted by grade: on to the band owners, the QA itself on its exact band's record.
      const graded = (await driver.values<QaBand>('qa.bands')).flatMap((b) => (b.graded ? [b.graded] : []));
      expect(graded.map((g) => g.candidate.id)).toEqual(['c3']);
      expect(Object.fromEntries(rejected.map((r) => [r.candidate.id, r.grade.codes]))).toEqual({
        c1: ['contaminated'],
        c2: ['eval-source'],
      });
      const c1 = rejected.find((r) => r.candidate.id === 'c1')!.grade;
      expect(c1.evalMatches).toEqual(
        expect.arrayContaining([expect.objectContaining({ evalSet: 'pubmedqa', itemId: '111' })]),
      );
      expect(c1.reasons[0]).toMatch(/^contaminated: pubmedqa item 111/);
      // Only c3 reached the judge.
      expect(judged.slice(before)).toHaveLength(1);
      const counter = registry.getSingleMetric('bioalchemy_grade_eval_rejections_total') as Counter;
      const values = (await counter.get()).values.map((v) => [v.labels.code, v.labels.eval_set, v.value]);
      expect(values).toEqual(
        expect.arrayContaining([
          ['contaminated', 'pubmedqa', 1],
          ['eval-source', 'pubmedqa', 1],
        ]),
      );
    } finally {
      await driver.close();
    }
  });
});

describe('an eval set that names every article', () => {
  it('is told once, with counts, when it is the source of nearly every candidate graded', () => {
    const share = new EvalSourceShare();
    const source = [
      { code: 'eval-source' as const, evalSet: 'corpus', itemId: 'i', how: 'pmid' as const, evidence: '' },
    ];
    const warnings: string[] = [];
    for (let i = 0; i < 19; i++) warnings.push(...share.count(source));
    expect(warnings).toEqual([]);
    warnings.push(...share.count(source));
    expect(warnings).toEqual([
      'eval set corpus names the source article of 20 of the 20 candidates graded since start: every one is rejected eval-source; check that it is an eval set',
    ]);
    for (let i = 0; i < 10; i++) warnings.push(...share.count(source));
    expect(warnings).toHaveLength(1);
    // A set that is the source of few articles is no warning.
    const few = new EvalSourceShare();
    const told: string[] = [];
    for (let i = 0; i < 100; i++) told.push(...few.count(i % 10 === 0 ? source : []));
    expect(told).toEqual([]);
  });
});
