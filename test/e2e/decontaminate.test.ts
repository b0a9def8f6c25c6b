import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClassifiedQa, GradedQa } from '../../schemas/qa.js';
import { normaliseText } from '../../sources/minhash.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, start } from '../llm-server/server.js';
import {
  cli,
  cliAsync,
  expectSummaryAddsUp,
  ingestAndRun,
  summaryCounts,
  topicValues,
  workspace,
} from './helpers.js';

/** pubmed-sample.xml's article: DOI 10.5555/TMR.2024.0042 (its article id), PMID 39000001. */
const SOURCE_PMID = '39000001';

async function topics(dir: string) {
  return {
    graded: await topicValues<GradedQa>(dir, 'qa.graded'),
    rejected: await topicValues<GradedQa>(dir, 'qa.rejected'),
    classified: await topicValues<ClassifiedQa>(dir, 'qa.classified'),
  };
}

/** The fixture articles ingested and run, the summary adding up. */
async function ingestAndRunAddingUp(config: string) {
  const run = await ingestAndRun(config);
  expectSummaryAddsUp(summaryCounts(run.stdout), expect);
  return run;
}

// Issue 23's done-when: an eval set made of the questions an earlier run accepted lets none of
// them through a fresh run over the same articles, each refused `contaminated`, naming the set
// and the item; an eval item naming an article's PMID keeps every QA of that article out.
describe('decontamination (eval sets in grade)', () => {
  let server: LlmServer;
  beforeAll(async () => {
    server = await start({ responder: pipelineResponder });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('a fresh run rejects every question of an eval set made from an earlier run; report and mix tell it', async () => {
    const first = workspace(server.url);
    await ingestAndRunAddingUp(first.config);
    const earlier = await topics(first.dir);
    expect(earlier.graded.length).toBeGreaterThan(0);
    const fromSource = earlier.graded.filter((g) => g.candidate.provenance.pmid === SOURCE_PMID);
    expect(fromSource.length, 'the PMID source article gave QA in the earlier run').toBeGreaterThan(0);

    // The eval set: the earlier run's accepted questions, MCQ options and all, in a folder.
    const evals = join(first.dir, 'evals');
    mkdirSync(evals);
    const items = earlier.graded.map(({ candidate: c }) => ({
      id: c.id,
      question: c.question,
      ...(c.kind === 'multiple-choice' ? { options: c.options } : {}),
    }));
    writeFileSync(join(evals, 'earlier-run.jsonl'), items.map((i) => JSON.stringify(i)).join('\n'));
    writeFileSync(
      join(evals, 'by-source.jsonl'),
      `${JSON.stringify({ id: 'src-1', question: 'Which reagent stabilises a protein crystal lattice at low temperature?', pmid: SOURCE_PMID })}\n`,
    );

    // What the set would remove from the earlier run's mix: every QA of it.
    const report = cli(['decontaminate', '--report', evals, '--config', first.config]);
    expect(report.status, report.stderr).toBe(0);
    const classifiedIds = new Set(earlier.classified.map((c) => c.candidate.id));
    expect(report.stdout).toContain(
      `the eval sets would remove ${classifiedIds.size} QA (100.0%) of ${new Set(earlier.classified.map((c) => c.candidate.articleId)).size} articles`,
    );
    expect(report.stdout).toMatch(
      new RegExp(`earlier-run \\(${items.length} items\\): ${classifiedIds.size} contaminated`),
    );
    expect(report.stdout).toContain('warning: every QA of the mix would go');
    const json = JSON.parse(
      cli(['decontaminate', '--report', evals, '--json', '--config', first.config]).stdout,
    ) as { removed: { id: string }[] };
    expect(new Set(json.removed.map((r) => r.id))).toEqual(classifiedIds);

    // A fresh run over the same articles with the folder in grade.evalSets.
    const fresh = workspace(server.url, { grade: { evalSets: [evals] } });
    const run = await ingestAndRunAddingUp(fresh.config);
    const now = await topics(fresh.dir);
    const evalQuestions = new Set(items.map((i) => normaliseText(i.question)));
    for (const g of now.graded)
      expect(evalQuestions.has(normaliseText(g.candidate.question)), g.candidate.question).toBe(false);
    // The first record of each candidate: a candidate given twice is then a `duplicate` of itself.
    const byId = new Map<string, GradedQa['grade']>();
    for (const r of now.rejected) if (!byId.has(r.candidate.id)) byId.set(r.candidate.id, r.grade);
    for (const item of items) {
      const grade = byId.get(item.id);
      expect(grade, `${item.id} again in the fresh run`).toBeDefined();
      expect(grade!.codes).toContain('contaminated');
      expect(grade!.evalMatches).toContainEqual(
        expect.objectContaining({ code: 'contaminated', evalSet: 'earlier-run' }),
      );
    }
    // Every candidate of the PMID's article is refused eval-source (its article id is its DOI).
    const sourced = now.rejected.filter(
      (r) => r.candidate.provenance.pmid === SOURCE_PMID && byId.get(r.candidate.id) === r.grade,
    );
    expect(sourced.length).toBeGreaterThan(0);
    for (const r of sourced) {
      expect(r.grade.codes).toContain('eval-source');
      expect(r.grade.evalMatches).toContainEqual(
        expect.objectContaining({ code: 'eval-source', evalSet: 'by-source', itemId: 'src-1', how: 'pmid' }),
      );
    }
    expect(now.graded.filter((g) => g.candidate.provenance.pmid === SOURCE_PMID)).toEqual([]);

    // Counted per set: the run summary by code, and `mix` per eval set.
    const contaminated = now.rejected.filter((r) =>
      r.grade.evalMatches?.some((m) => m.code === 'contaminated' && m.evalSet === 'earlier-run'),
    ).length;
    expect(run.stdout).toMatch(/^ +\d+ {2}contaminated$/m);
    const mix = await cliAsync(['mix', '--config', fresh.config]);
    expect(mix.code, mix.stderr).toBe(0);
    expect(mix.stdout).toContain('kept out by eval sets (grade.evalSets):');
    expect(mix.stdout).toMatch(
      new RegExp(`^ {2}earlier-run: ${contaminated} contaminated, \\d+ eval-source$`, 'm'),
    );
    expect(mix.stdout).toMatch(
      new RegExp(`^ {2}by-source: \\d+ contaminated, ${sourced.length} eval-source$`, 'm'),
    );
  }, 600_000);
});
