import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PIPELINE_PROCESSORS } from '../../processors/pipeline.js';
import type { QaWithdrawal } from '../../schemas/dedup.js';
import type { ClassifiedQa, GradedQa } from '../../schemas/qa.js';
import { normaliseText } from '../../sources/minhash.js';
import { openRuntime } from '../../topology/runtime/open.js';
import { readAll } from '../conformance/suite.js';
import {
  BIN,
  cli,
  ingestAndRun,
  keptQa,
  keptValues,
  syntheticArticles,
  topicValues,
  workspace,
} from '../e2e/helpers.js';
import { duplicatedCorpus, line } from '../fixtures/duplicated-corpus.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, type Responder, start } from '../llm-server/server.js';
import { KAFKA } from './env.js';

/** The QA kept (keptQa) by id, with their questions as the dedup compares them. */
const keptOf = (qas: readonly ClassifiedQa[], withdrawn: readonly QaWithdrawal[]) =>
  new Map(keptQa(qas, withdrawn).map((q) => [q.candidate.id, normaliseText(q.candidate.question)]));

const MARKER = 'thermotolerance assay';
const SHARED = 'Which chaperone family refolds heat-denatured proteins in an ATP-dependent cycle?';

/** Six different works, newest first in the file, whose first free-form question is SHARED. */
const sharedWorks = () =>
  `${Array.from({ length: 6 }, (_, i) =>
    line({
      pmid: String(41_000_000 + i),
      title: `Chaperone study ${i}`,
      abstract: `Study ${i} ran a ${MARKER} on ${['yeast', 'worms', 'flies', 'plants', 'fish', 'mice'][i]} kept at ${30 + i} degrees for ${i + 2} days and counted the animals or colonies that recovered, finding recovery fell as the exposure grew longer in every replicate.`,
      published: `${2024 - i}-0${1 + (i % 9)}-15`,
    }),
  ).join('\n')}\n`;

const sharedQuestion: Responder = async (request, context) => {
  const reply = await pipelineResponder(request, context);
  if (
    request.response_format?.json_schema?.name !== 'freeform' ||
    !JSON.stringify(request.messages).includes(MARKER)
  )
    return reply;
  const parsed = JSON.parse(reply) as { questions: { question: string }[] };
  if (parsed.questions[0]) parsed.questions[0].question = SHARED;
  return JSON.stringify(parsed);
};

// Issue 30, done when: three workers on Kafka, one killed mid-run, accept the QA ids one embedded
// process accepts, with no question twice. Where two works ask alike, the QA kept is the first in
// dedupOrder (earliest publication, then id), whichever reached its band owner first.
describe('one dataset across workers on Kafka', () => {
  let server: LlmServer;
  let dir: string;
  let corpus: string;
  let embedded: Map<string, string>;
  /** QA the embedded run refused or withdrew as a duplicate of another work's question. */
  let acrossWorks = 0;
  beforeAll(async () => {
    server = await start({
      responder: sharedQuestion,
      latency: { kind: 'lognormal', medianMs: 20, p99Ms: 200 },
    });
    dir = mkdtempSync(join(tmpdir(), 'bioalchemy-one-dataset-'));
    // The copies and the preprint pair, 24 works of their own, and six works that ask one question.
    corpus = join(dir, 'corpus.jsonl');
    const copies = duplicatedCorpus(dir, 8);
    writeFileSync(corpus, `${readFileSync(copies, 'utf8')}${syntheticArticles(24)}${sharedWorks()}`);
    const ws = workspace(server.url);
    await ingestAndRun(ws.config, [corpus]);
    embedded = keptOf(await keptValues(ws.dir), []);
    // Where two works ask alike, arrival order could choose the one kept: the case this test is for.
    const graded = await topicValues<GradedQa>(ws.dir, 'qa.graded');
    const rejected = await topicValues<GradedQa>(ws.dir, 'qa.rejected');
    const articleOf = new Map([...graded, ...rejected].map((g) => [g.candidate.id, g.candidate.articleId]));
    const named = [
      ...rejected.filter((r) => r.grade.duplicateOf).map((r) => [r.candidate.id, r.grade.duplicateOf!]),
      ...(await topicValues<QaWithdrawal>(ws.dir, 'qa.withdrawn')).map((w) => [w.qaId, w.duplicateOf]),
    ];
    acrossWorks = named.filter(([id, of]) => articleOf.get(id!) !== articleOf.get(of!)).length;
  }, 300_000);
  afterAll(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const client of ['kafkajs', 'rdkafka'] as const) {
    it(`${client}: three workers, one killed with SIGKILL, keep the embedded run's QA ids, no question twice`, async () => {
      const app = `od${randomUUID().slice(0, 8)}`;
      const log = `kafka://${KAFKA}?client=${client}`;
      const config = join(dir, `${client}.json`);
      writeFileSync(
        config,
        JSON.stringify({
          log,
          app,
          llm: { baseUrl: server.url, apiKeyEnv: 'E2E_LLM_KEY', model: 'test-model' },
          processors: {
            extract: { concurrency: 3 },
            grade: { concurrency: 3 },
            classify: { concurrency: 3 },
          },
        }),
      );
      const ingest = cli(['ingest', corpus, '--config', config]);
      expect(ingest.status, ingest.stderr).toBe(0);
      const workers = [1, 2, 3].map((w) =>
        worker([
          'run',
          '--config',
          config,
          '--processors',
          PIPELINE_PROCESSORS.join(','),
          '--worker-id',
          `w${w}`,
        ]),
      );
      const runtime = await openRuntime(log, { app });
      let kept = new Map<string, string>();
      const read = async () => {
        kept = keptOf(
          (await readAll(runtime, 'qa.classified')).map((r) => r.value as ClassifiedQa),
          (await readAll(runtime, 'qa.withdrawn')).map((r) => r.value as QaWithdrawal),
        );
      };
      try {
        await until(
          () => 'a first classified QA',
          async () => {
            await read();
            return kept.size > 0;
          },
          workers,
        );
        workers[0]!.process.kill('SIGKILL');
        await once(workers[0]!.process, 'exit');
        const missing = () => [...embedded.keys()].filter((id) => !kept.has(id)).length;
        const extra = () => [...kept.keys()].filter((id) => !embedded.has(id)).length;
        await until(
          () =>
            `the embedded run's QA ids (${missing()} of ${embedded.size} missing, ${extra()} kept that it did not keep)`,
          async () => {
            await read();
            return missing() === 0 && extra() === 0;
          },
          workers.slice(1),
        );
        expect(acrossWorks).toBeGreaterThan(0);
        const questions = [...kept.values()];
        expect(new Set(questions).size, 'no question twice').toBe(questions.length);
        expect(new Set(kept.keys())).toEqual(new Set(embedded.keys()));
      } finally {
        await runtime.close();
        await Promise.all(workers.map(stop));
      }
    }, 900_000);
  }
});

interface Worker {
  readonly process: ChildProcess;
  stderr: string;
}

function worker(args: string[]): Worker {
  const w: Worker = {
    process: spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, E2E_LLM_KEY: 'test-key', BIOALCHEMY_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'pipe'],
    }),
    stderr: '',
  };
  w.process.stderr!.on('data', (c: Buffer) => {
    w.stderr = (w.stderr + c).slice(-20_000);
  });
  return w;
}

/** SIGTERM, and SIGKILL if it has not exited 20 s later: a stuck worker must not hide the test's own error. */
async function stop(w: Worker): Promise<void> {
  if (w.process.exitCode !== null || w.process.signalCode !== null) return;
  const exited = once(w.process, 'exit');
  w.process.kill('SIGTERM');
  const timer = setTimeout(() => w.process.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}

async function until(
  what: () => string,
  done: () => Promise<boolean>,
  alive: readonly Worker[],
): Promise<void> {
  const deadline = Date.now() + 420_000;
  while (!(await done())) {
    const exited = alive.find((w) => w.process.exitCode !== null);
    if (exited)
      throw new Error(`a worker exited while waiting for ${what()}:\n${exited.stderr.slice(-3000)}`);
    if (Date.now() > deadline)
      throw new Error(`no ${what()} within 420 s; last worker's log:\n${alive.at(-1)?.stderr.slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}
