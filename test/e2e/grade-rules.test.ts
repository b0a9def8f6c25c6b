import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Config } from '../../schemas/config.js';
import type { MixState } from '../../schemas/mix-state.js';
import { type ClassifiedQa, type GradedQa, RejectionCode } from '../../schemas/qa.js';
import { normaliseText } from '../../sources/minhash.js';
import { arbitraryJudgeResponder } from '../llm-server/arbitrary-judge-responder.js';
import { type LlmServer, start } from '../llm-server/server.js';
import {
  cliAsync,
  expectSummaryAddsUp,
  ingestAndRun,
  summaryCounts,
  topicValues,
  workspace,
} from './helpers.js';

/** The summary's `rejections by code` block: `     12  judge-inconsistent` lines. */
function rejectionCounts(stdout: string): Record<string, number> {
  const block = stdout.match(/^rejections by code.*\n((?: {2}.*\n?)*)/m)?.[1] ?? '';
  return Object.fromEntries([...block.matchAll(/^ +(\d+) {2}(\S+)$/gm)].map((m) => [m[2]!, Number(m[1])]));
}

// Issue 24's done-when, on our own fixture articles: a model that writes titles as questions and
// yes/no answers, and judges with arbitrary valid scores and verdicts, gets nothing past grade that
// breaks its rules, and every refusal says which rule.
describe('grade enforces its own rules (test LLM with arbitrary judges)', () => {
  let server: LlmServer;
  beforeAll(async () => {
    server = await start({ responder: arbitraryJudgeResponder });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('accepts no QA under the minimums, with a yes/no answer or a title as question; every rejection has its codes, counted in the summary', async () => {
    const ws = workspace(server.url);
    const run = await ingestAndRun(ws.config);
    expectSummaryAddsUp(summaryCounts(run.stdout), expect);

    const titles = new Map(
      (await topicValues<{ id: string; title: string }>(ws.dir, 'articles')).map((a) => [a.id, a.title]),
    );
    const graded = await topicValues<GradedQa>(ws.dir, 'qa.graded');
    const rejected = await topicValues<GradedQa>(ws.dir, 'qa.rejected');
    const classified = await topicValues<ClassifiedQa>(ws.dir, 'qa.classified');
    const mixes = await topicValues<MixState>(ws.dir, 'mix.state');
    expect(graded.length).toBeGreaterThan(0);

    const { accept } = Config.parse({}).grade;
    for (const { candidate, grade } of graded) {
      const judgeScale = (unit: number) => Math.round(unit * 4 + 1);
      expect(judgeScale(grade.scores.quality), candidate.id).toBeGreaterThanOrEqual(accept.quality);
      expect(judgeScale(grade.scores.answerability), candidate.id).toBeGreaterThanOrEqual(
        accept.answerability,
      );
      expect(judgeScale(grade.scores.verifiability), candidate.id).toBeGreaterThanOrEqual(
        accept.verifiability,
      );
      expect(grade.codes).toEqual([]);
      if (candidate.kind === 'free-form') expect(candidate.answer).not.toMatch(/^(yes|no|true|false)\b/i);
      expect(normaliseText(candidate.question)).not.toBe(normaliseText(titles.get(candidate.articleId)!));
    }

    // Every rejection names the rules it failed, from the closed list.
    const counted: Record<string, number> = {};
    for (const { grade } of rejected) {
      expect(grade.verdict).toBe('reject');
      expect(grade.codes.length).toBeGreaterThan(0);
      for (const code of grade.codes) {
        expect(RejectionCode.options).toContain(code);
        counted[code] = (counted[code] ?? 0) + 1;
      }
    }
    // The model's faults were caught by the rules meant for them.
    for (const code of [
      'copied-text',
      'yes-no-answer',
      'duplicate-options',
      'judge-inconsistent',
      'low-quality',
    ])
      expect(counted[code], code).toBeGreaterThan(0);
    // The summary counts each code as the topic holds it.
    expect(rejectionCounts(run.stdout)).toEqual(counted);

    // Classify kept only labels at or above the minimum; a QA left without one is counted
    // unlabelled by the mix, not dropped.
    expect(classified.length).toBe(graded.length);
    for (const qa of classified)
      for (const label of qa.classification.labels) expect(label.confidence).toBeGreaterThanOrEqual(0.5);
    const unlabelled = classified.filter((qa) => qa.classification.labels.length === 0).length;
    const last = mixes.at(-1)!;
    expect(last.metrics.items + last.metrics.heldOut).toBe(classified.length);
    expect(last.metrics.unlabelled).toBe(unlabelled);
    const mix = await cliAsync(['mix', '--config', ws.config]);
    expect(mix.code, mix.stderr).toBe(0);
    expect(mix.stdout).toContain(
      `unlabelled (no label reached classify.minConfidence): ${unlabelled} items, in no topic's quota`,
    );
  }, 300_000);
});
