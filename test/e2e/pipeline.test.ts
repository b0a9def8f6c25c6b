import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Article } from '../../schemas/article.js';
import type { GradedQa } from '../../schemas/qa.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, start } from '../llm-server/server.js';
import {
  cli,
  cliAsync,
  expectSummaryAddsUp,
  ingestAndRun,
  runUntilIdle,
  summaryCounts,
  topicValues,
  workspace,
} from './helpers.js';

// The whole pipeline on the embedded runtime, through the CLI as a user runs it, against the
// project's OpenAI-compatible test server behind the real `openai` client.
describe('the pipeline end to end (embedded, test LLM server)', () => {
  let server: LlmServer;
  beforeAll(async () => {
    server = await start({ responder: pipelineResponder });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('turns fixture articles into classified QA with provenance; every refusal has a reason; the summary adds up', async () => {
    server.resetStats();
    const ws = workspace(server.url);
    const run = await ingestAndRun(ws.config);
    const counts = summaryCounts(run.stdout);
    const articles = await topicValues<{ id: string }>(ws.dir, 'articles');
    expect(counts.extract!.in).toBe(articles.length);
    // Every input of grade, the dedup join and classify ends in exactly one place.
    expectSummaryAddsUp(counts, expect);
    const c = counts.classify!;
    expect(counts.grade!['qa.rejected']).toBeGreaterThan(0);

    const classified = await topicValues(ws.dir, 'qa.classified');
    expect(classified.length).toBe(c['qa.classified']);
    expect(classified.length).toBeGreaterThan(5);
    // One article is in the fixtures twice (JATS and MEDLINE): one work, updated by its second
    // record, whose texts were extracted once, so no candidate comes twice.
    const classifiedIds = classified.map((qa) => (qa as { candidate: { id: string } }).candidate.id);
    expect(new Set(classifiedIds).size).toBe(classifiedIds.length);
    const candidateIds = (await topicValues<{ id: string }>(ws.dir, 'qa.candidates')).map((q) => q.id);
    expect(new Set(candidateIds).size).toBe(candidateIds.length);
    const updates = (await topicValues<Article>(ws.dir, 'articles')).filter((a) => a.textSentBefore.length);
    expect(updates.length).toBeGreaterThan(0);
    expect((await topicValues<{ code: string }>(ws.dir, 'dlq')).map((d) => d.code)).not.toContain(
      'duplicate',
    );
    const ids = new Set(articles.map((a) => a.id));
    for (const value of classified) {
      const qa = value as {
        candidate: {
          articleId: string;
          passage: { text: string };
          provenance: { articleId: string; source: string };
          generatedBy: { model: string; promptVersion: string };
        };
        grade: { gradedBy: { model: string; promptVersion: string } };
        classification: {
          labels: { category: string; confidence: number }[];
          classifiedBy: { promptVersion: string };
        };
      };
      expect(ids.has(qa.candidate.articleId)).toBe(true);
      expect(qa.candidate.provenance.articleId).toBe(qa.candidate.articleId);
      expect(qa.candidate.passage.text.length).toBeGreaterThan(0);
      expect(qa.candidate.generatedBy).toMatchObject({
        model: 'test-model',
        promptVersion: expect.stringMatching(/^(mcq|freeform)-v\d+$/),
      });
      expect(qa.grade.gradedBy.promptVersion).toMatch(/^(mcq-quality|freeform-grade)-v\d+$/);
      expect(qa.classification.classifiedBy.promptVersion).toMatch(/^classify-v\d+$/);
      // Labels under classify.minConfidence are dropped (a QA may be left with none: unlabelled).
      for (const label of qa.classification.labels) expect(label.confidence).toBeGreaterThanOrEqual(0.5);
    }
    for (const { grade } of await topicValues<GradedQa>(ws.dir, 'qa.rejected')) {
      expect(grade.reasons.length).toBeGreaterThan(0);
      expect(grade.codes.length).toBeGreaterThan(0);
    }
    // The context-bound questions the test model writes are refused by the checks, with that reason.
    const reasons = (await topicValues<GradedQa>(ws.dir, 'qa.rejected')).flatMap((g) => g.grade.reasons);
    expect(reasons.some((r) => r.startsWith('self-contained:'))).toBe(true);
    expect(reasons.some((r) => r.startsWith('judge:'))).toBe(true);
    expect(run.stdout).toMatch(/^LLM: \d+ calls paid/m);
    // The sampler saw every classified QA: its last mix counts each once.
    const mixes = await topicValues<{ version: number; metrics: { items: number; heldOut: number } }>(
      ws.dir,
      'mix.state',
    );
    expect(mixes.length).toBeGreaterThan(0);
    const last = mixes.at(-1)!;
    expect(last.metrics.items + last.metrics.heldOut).toBe(classified.length);
    expect(counts.sampler!.in).toBe(classified.length);
    // The count sink reads the classified QA and the mix versions (into mix_history).
    expect(counts['count-sink']!.in).toBe(classified.length + mixes.length);

    // A second run over the same log finds nothing to do and pays nothing.
    const before = server.stats().requests;
    const again = await runUntilIdle(ws.config);
    expect(again.code, again.stderr).toBe(0);
    expect(summaryCounts(again.stdout).extract!.in).toBe(0);
    expect(server.stats().requests).toBe(before);
  }, 300_000);

  it('evaluates the classifier on articles whose MeSH headings reach the taxonomy', async () => {
    const ws = workspace(server.url);
    const article = (i: number, heading: string) =>
      JSON.stringify({
        id: `pmid:${900 + i}`,
        source: 'medline',
        doi: null,
        pmid: String(900 + i),
        pmcid: null,
        title: `Study ${i}`,
        abstract: 'Populations of the species declined where the habitat was fragmented.',
        sections: [],
        mesh: [{ descriptorUi: null, name: heading, majorTopic: true, qualifiers: [] }],
        journal: null,
        published: '2024',
        licence: null,
        contentHash: `h${i}`,
      });
    const lines = [
      article(1, 'Ecology'),
      article(2, 'Genetics'),
      article(3, 'Humans'),
      article(4, 'Ecology'),
    ];
    expect(cli(['produce', 'articles', '--config', ws.config], `${lines.join('\n')}\n`).status).toBe(0);
    const r = await cliAsync(['eval', 'classify', '--limit', '2', '--config', ws.config]);
    expect(r.code, r.stderr).toBe(0);
    // The article whose only heading is outside Biology is not evaluated; --limit keeps 2 of the other 3.
    expect(r.stdout).toMatch(/^classifier against MeSH-derived labels: 2 articles \(0 failed calls\)/m);
    expect(r.stdout).toMatch(/^micro\s+\d+\.\d%/m);
    expect(r.stdout).toMatch(/^macro\s+\d+\.\d%/m);
    expect(r.stdout).toContain('F1 72.7%');
  }, 120_000);
});
