import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { poolItem, rolloutRow } from '../../processors/feeder/row.js';
import { canonicalOutputs, score } from '../../reward/index.js';
import { FeederConfig } from '../../schemas/feeder.js';
import type { ClassifiedQa } from '../../schemas/qa.js';
import type { GroundTruth } from '../../schemas/rollout-batch.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, type Responder, start } from '../llm-server/server.js';
import { cli, ingestAndRun, topicValues, workspace } from './helpers.js';

const PYTHON = new URL('../../.deploy/py-venv/bin/python', import.meta.url).pathname;
const ARTICLE = new URL('../fixtures/notation/immune-signalling.md', import.meta.url).pathname;

/** Terms in biology's own notation, as the fixture article writes them. */
const NOTATION =
  /\b[A-Z]\. [a-z]{3,}\b|\b\d,\d+-[a-z]+(?: D3)?|CD\d+\+ T cells|Na\+\/K\+-ATPase|Ca2\+|NF-κB|\d′ UTR|\bmitochondria\b/g;

/** The pipeline's test replies, with free-form answers a notation term of the passage where it has one. */
const notationResponder: Responder = async (request, context) => {
  const reply = await pipelineResponder(request, context);
  if (request.response_format?.json_schema?.name !== 'freeform') return reply;
  // The passage's own terms, not the title's (which every passage of the article carries).
  const passage = String(request.messages.at(-1)?.content ?? '').replace(/Title:[^\n]*/, '');
  const terms = passage.match(NOTATION) ?? [];
  const parsed = JSON.parse(reply) as { questions: { answer: string }[] };
  if (terms.length === 0 || parsed.questions.length === 0) return reply;
  parsed.questions[0]!.answer = terms[Math.floor(context.random() * terms.length)]!;
  return JSON.stringify(parsed);
};

/**
 * Each verl row's own solution and canonical answers, and those of every accepted QA (stdin, as
 * rows would carry them), scored by the Python twin: the failures.
 */
const PYTHON_CHECK = `
import json, sys
import pyarrow.parquet as pq
from bioalchemy_client import compute_score
rows = pq.read_table(sys.argv[1]).to_pylist() + json.load(sys.stdin)
failed = []
for r in rows:
    a = r["answer"]
    for out in (r["solution"], f"Answer: {a}", "\\\\boxed{" + a + "}", f"The answer is {a}."):
        if compute_score(r["data_source"], out, r["reward_model"]["ground_truth"], r["extra_info"]) != 1.0:
            failed.append([a, out])
print(json.dumps({"rows": len(rows), "failed": failed}))
`;

// Issue 29: every QA the stream accepts is one the reward pays in each canonical form, in the
// TypeScript that grade and /v1/reward run and in the Python that trainers run.
describe('every served QA is verifiable by construction', () => {
  let server: LlmServer;
  beforeAll(async () => {
    server = await start({ responder: notationResponder });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('every exported row scores 1 on its solution, Answer: X, \\boxed{X} and The answer is X.', async () => {
    const ws = workspace(server.url);
    const run = await ingestAndRun(ws.config, [ARTICLE]);
    // The summary ends with one of them as a trainer will see it, and how to export them all.
    expect(run.stdout).toMatch(
      /an accepted QA \(bioalchemy export [^)]*\):\n {2}question: .+\n(.*\n)* {2}answer: {3}.+\n {2}topics: {3}.+/,
    );
    const files = { jsonl: join(ws.dir, 'rl.jsonl'), parquet: join(ws.dir, 'rl.parquet') };
    for (const [format, out] of [
      ['jsonl', files.jsonl],
      ['verl-parquet', files.parquet],
    ] as const) {
      const r = cli(['export', '--format', format, '--out', out, '--config', ws.config]);
      expect(r.status, r.stderr).toBe(0);
    }
    const rows = readFileSync(files.jsonl, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { answer: string; solution: string; ground_truth: GroundTruth });
    const isNotation = (answer: string) => new RegExp(NOTATION.source).test(answer);
    const accepted = await topicValues<ClassifiedQa>(ws.dir, 'qa.classified');
    expect(
      accepted.filter((qa) => isNotation(qa.candidate.answer)).length,
      'accepted in notation',
    ).toBeGreaterThanOrEqual(5);
    expect(rows.filter((r) => isNotation(r.answer)).length, 'exported in notation').toBeGreaterThanOrEqual(1);
    for (const row of rows) {
      const { answer: ground_truth, kind, options, aliases } = row.ground_truth;
      for (const output of [row.solution, ...canonicalOutputs(row.answer)])
        expect(
          score({ kind, ground_truth, options, aliases, output }),
          `${ground_truth} | ${output}`,
        ).toMatchObject({
          score: 1,
        });
    }
    // Every accepted QA, selected or not, as a row would carry it.
    const settings = {
      templates: FeederConfig.parse({}).templates,
      dataSource: 'bioalchemy',
      ability: 'biology',
    };
    const all = accepted.map((qa, index) =>
      rolloutRow(poolItem(qa), settings, { index, split: 'train', copy: 0 }),
    );
    for (const row of all) {
      const { answer: ground_truth, kind, options, aliases } = row.ground_truth;
      for (const output of [row.solution, ...canonicalOutputs(row.answer)])
        expect(
          score({ kind, ground_truth, options, aliases, output }).score,
          `${ground_truth} | ${output}`,
        ).toBe(1);
    }
    const py = spawnSync(PYTHON, ['-c', PYTHON_CHECK, files.parquet], {
      encoding: 'utf8',
      input: JSON.stringify(all),
    });
    expect(py.status, py.stderr).toBe(0);
    const checked = JSON.parse(py.stdout) as { rows: number; failed: string[][] };
    expect(checked.rows).toBe(rows.length + all.length);
    expect(checked.failed).toEqual([]);
  }, 600_000);
});
