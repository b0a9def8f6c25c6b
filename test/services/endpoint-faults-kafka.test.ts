import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { ClassifiedQa, QaWithdrawal } from '../../schemas/index.js';
import { KafkaRuntime } from '../../topology/runtime/kafka/index.js';
import { readAll } from '../conformance/suite.js';
import { cli, cliAsync, keptQa, runUntilIdle, workspace } from '../e2e/helpers.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, start } from '../llm-server/server.js';
import { KAFKA } from './env.js';

const ARTICLES = new URL('../../examples/articles', import.meta.url).pathname;
// Plain JSON values (no registry): readAll parses them as the other Kafka tests do.
const LOG = `kafka://${KAFKA}?client=kafkajs`;
const LLM = {
  apiKeyEnv: 'E2E_LLM_KEY',
  retry: { baseDelayMs: 5, maxDelayMs: 50 },
  circuit: { failureThreshold: 8, probeIntervalMs: 1000 },
};

/** An app of its own on the broker, examples/articles ingested, and a config for `llm`. */
function app(url: string, llm: Record<string, unknown>) {
  const name = `faults-${randomBytes(4).toString('hex')}`;
  const ws = workspace(url, {
    log: LOG,
    app: name,
    llm: { baseUrl: url, model: 'test-model', ...LLM, ...llm },
  });
  onTestFinished(() => rmSync(ws.dir, { recursive: true, force: true }));
  const ingest = cli(['ingest', ARTICLES, '--config', ws.config]);
  if (ingest.status !== 0) throw new Error(`ingest: ${ingest.stderr}`);
  /** The same config with the mistake gone. */
  const fix = () => {
    const config = JSON.parse(readFileSync(ws.config, 'utf8'));
    writeFileSync(
      ws.config,
      JSON.stringify({ ...config, llm: { baseUrl: url, model: 'test-model', ...LLM } }),
    );
  };
  return { ...ws, name, fix };
}

async function topic<T>(name: string, t: string): Promise<T[]> {
  const runtime = await KafkaRuntime.open(LOG, { app: name });
  try {
    return (await readAll(runtime, t)).map((r) => r.value as T);
  } finally {
    await runtime.close();
  }
}

const kept = async (name: string) =>
  keptQa(await topic<ClassifiedQa>(name, 'qa.classified'), await topic<QaWithdrawal>(name, 'qa.withdrawn'))
    .map((q) => q.candidate.id)
    .sort();

describe('Kafka: an endpoint fault never eats the corpus; dead letters replay once', () => {
  let server: LlmServer;
  let control: string[];

  beforeAll(async () => {
    server = await start({ responder: pipelineResponder, models: ['test-model'] });
  });
  afterAll(() => server?.stop());

  it('a good run: the QA every other run is compared with', async () => {
    const good = app(server.url, {});
    const run = await runUntilIdle(good.config);
    expect(run.code, run.stderr).toBe(0);
    control = await kept(good.name);
    expect(control.length).toBeGreaterThan(0);
  }, 300_000);

  it('a mistyped model: run --until-idle exits non-zero within 60 s with 0 dead letters; fixed, the QA of the good run', async () => {
    const wrong = app(server.url, { model: 'test-modl' });
    const started = performance.now();
    const run = await runUntilIdle(wrong.config);
    expect(run.code).not.toBe(0);
    expect((performance.now() - started) / 1000).toBeLessThan(60);
    expect(run.stderr).toMatch(
      /^bioalchemy: stopped: .*fix llm\.model:.*The model `test-modl` does not exist/m,
    );
    expect(await topic(wrong.name, 'dlq')).toEqual([]);
    wrong.fix();
    const fixed = await runUntilIdle(wrong.config);
    expect(fixed.code, fixed.stderr).toBe(0);
    expect(await kept(wrong.name)).toEqual(control);
  }, 300_000);

  it('dead letters of a fault fixed since: two dlq replays at once re-drive them once, a run gives the QA of the good run, a later replay adds nothing', async () => {
    server.setFaults({ sequence: ['bad-request', 'bad-request'] });
    const ws = app(server.url, {});
    const first = await runUntilIdle(ws.config);
    server.setFaults({});
    expect(first.code, first.stderr).toBe(0);
    expect(
      (await topic<{ code: string }>(ws.name, 'dlq')).filter((d) => d.code === 'llm-request-refused'),
    ).toHaveLength(2);
    // Two at once: one re-drives both, the other finds them replayed (fenced if it planned first).
    const both = await Promise.all(
      [0, 1].map(() => cliAsync(['dlq', 'replay', '--code', 'llm-request-refused', '--config', ws.config])),
    );
    for (const r of both) expect(r.code, r.stderr).toBe(0);
    const counts = both.map((r) => Number(/match: replayed (\d+) /.exec(r.stdout)?.[1]));
    expect(counts.sort()).toEqual([0, 2]);
    expect(await topic(ws.name, 'dlq.replayed')).toHaveLength(2);
    const again = await runUntilIdle(ws.config);
    expect(again.code, again.stderr).toBe(0);
    expect(await kept(ws.name)).toEqual(control);
    const second = cli(['dlq', 'replay', '--code', 'llm-request-refused', '--config', ws.config]);
    expect(second.stdout).toMatch(/match: replayed 0 .*, 2 replayed before/);
  }, 300_000);
});
