import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dedupOrder } from '../../processors/qa/near-duplicates.js';
import type { Article, ClassifiedQa, GradedQa, QaWithdrawal } from '../../schemas/index.js';
import { normaliseText } from '../../sources/minhash.js';
import { duplicatedCorpus, line } from '../fixtures/duplicated-corpus.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, type Responder, start } from '../llm-server/server.js';
import { cli, ingestAndRun, keptValues, topicValues, workspace } from './helpers.js';

const questionsOf = (qas: { candidate: { question: string } }[]) =>
  qas.map((q) => normaliseText(q.candidate.question));

// Issue 30: one dataset, whatever the records of a work and whichever partition a question comes from.
describe('one dataset: no question twice', () => {
  let server: LlmServer;
  beforeAll(async () => {
    server = await start({ responder: pipelineResponder });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('eight copies of one abstract give the QA of one; a preprint and its published version are one work', async () => {
    const eight = workspace(server.url);
    await ingestAndRun(eight.config, [duplicatedCorpus(eight.dir, 8)]);
    const one = workspace(server.url);
    await ingestAndRun(one.config, [duplicatedCorpus(one.dir, 1)]);

    const works = async (dir: string) =>
      new Set((await topicValues<Article>(dir, 'articles')).map((a) => a.id));
    expect([...(await works(eight.dir))].sort()).toEqual(['doi:10.1101/2025.05.05.650001', 'pmid:39000000']);
    expect(await works(one.dir)).toEqual(await works(eight.dir));

    const accepted = await keptValues(eight.dir);
    expect(accepted.length).toBeGreaterThan(0);
    const questions = questionsOf(accepted);
    expect(new Set(questions).size).toBe(questions.length);
    // The same QA, id for id, as from one copy: the seven others added ids to the work, no question.
    const ids = (qas: ClassifiedQa[]) => qas.map((q) => q.candidate.id).sort();
    expect(ids(accepted)).toEqual(ids(await keptValues(one.dir)));
    // The work remembers every record it was made of.
    const latest = (await topicValues<Article>(eight.dir, 'articles'))
      .filter((a) => a.id === 'pmid:39000000')
      .at(-1)!;
    expect(latest.records.map((r) => r.id)).toEqual(
      Array.from({ length: 8 }, (_, i) => `pmid:${39_000_000 + i}`),
    );
    // `bioalchemy mix` says what was removed, by kind.
    const mix = cli(['mix', '--json', '--config', eight.config]);
    expect(mix.status, mix.stderr).toBe(0);
    expect((JSON.parse(mix.stdout) as { duplicatesRemoved: unknown }).duplicatesRemoved).toMatchObject({
      records: { id: 0, relation: 0, text: 7, 'near-text': 1 },
      worksWithCopies: 2,
    });
  });
});

describe('a question accepted in one partition is refused in every other', () => {
  // Every passage of every article is asked the same free-form question: the articles spread over
  // four partitions, graded by four tasks, and the band owners see them all.
  const SAME = 'Which enzyme family transfers phosphate groups from ATP to serine residues of proteins?';
  const sameQuestion: Responder = async (request, context) => {
    const reply = await pipelineResponder(request, context);
    if (request.response_format?.json_schema?.name !== 'freeform') return reply;
    const parsed = JSON.parse(reply) as { questions: { question: string }[] };
    for (const q of parsed.questions) q.question = SAME;
    return JSON.stringify(parsed);
  };
  let server: LlmServer;
  beforeAll(async () => {
    server = await start({ responder: sameQuestion });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('keeps the first in dedupOrder, and refuses or withdraws each other copy naming one before it', async () => {
    const ws = workspace(server.url);
    const corpus = join(ws.dir, 'works.jsonl');
    writeFileSync(
      corpus,
      `${Array.from({ length: 12 }, (_, i) =>
        line({
          pmid: String(40_000_000 + i),
          title: `Study ${i}`,
          abstract: `Study ${i} measured ${['kinase', 'operon', 'ligase', 'channel'][i % 4]} activity in ${['roots', 'gills', 'livers'][i % 3]} of organisms grown at temperature ${10 + i} with nitrogen supplied as nitrate or ammonium, and found activity rising with temperature in every replicate.`,
        }),
      ).join('\n')}\n`,
    );
    await ingestAndRun(ws.config, [corpus]);
    const graded = await topicValues<GradedQa>(ws.dir, 'qa.graded');
    const rejected = await topicValues<GradedQa>(ws.dir, 'qa.rejected');
    const withdrawn = new Map(
      (await topicValues<QaWithdrawal>(ws.dir, 'qa.withdrawn')).map((w) => [w.qaId, w.duplicateOf]),
    );
    const same = normaliseText(SAME);
    const isSame = (g: GradedQa) => normaliseText(g.candidate.question) === same;
    const orderOf = (g: GradedQa) => dedupOrder(g.candidate.id, g.candidate.provenance.published);
    // A reply that asks the question twice of one passage gives one QA id twice: grade refuses the
    // second as the same candidate again, naming itself. That is one QA, not another copy. A copy
    // can be refused as a near-duplicate (similarity 1): its exact band's owner had not yet seen
    // the copy its MinHash bands' owners had.
    const copies = [
      ...graded,
      ...rejected.filter((r) => r.grade.duplicateOf && r.grade.duplicateOf !== r.candidate.id),
    ].filter(isSame);
    const orders = new Map(copies.map((g) => [g.candidate.id, orderOf(g)]));
    const kept = graded.filter((g) => isSame(g) && !withdrawn.has(g.candidate.id));
    expect(kept).toHaveLength(1);
    expect(orderOf(kept[0]!)).toBe([...orders.values()].sort()[0]);
    // Every other copy: refused, or accepted and withdrawn, naming a copy that comes before it.
    const others = copies.filter((g) => g !== kept[0]);
    expect(others.length).toBeGreaterThanOrEqual(5);
    for (const g of others) {
      const named = g.grade.verdict === 'reject' ? g.grade.duplicateOf! : withdrawn.get(g.candidate.id)!;
      expect(orders.has(named), `${g.candidate.id} names ${named}`).toBe(true);
      expect(orders.get(named)! < orderOf(g), `${g.candidate.id} names ${named}`).toBe(true);
    }
    // They came from several partitions' grade tasks: articles of more than one key hash.
    expect(new Set(others.map((d) => d.candidate.articleId)).size).toBeGreaterThanOrEqual(5);
  });
});
