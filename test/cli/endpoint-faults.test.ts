import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, keptValues, runUntilIdle, topicValues, workspace } from '../e2e/helpers.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, type ServerOptions, start } from '../llm-server/server.js';
import { until } from '../until.js';

const ARTICLES = new URL('../../examples/articles', import.meta.url).pathname;
/** The key the test server accepts: the one every CLI child of the e2e helpers has. */
const KEY = 'test-key';

/** A data folder with examples/articles ingested, and a config for `url` (with `llm` overrides). */
function ingested(url: string, llm: Record<string, unknown> = {}) {
  const llmConfig = (over: Record<string, unknown>, baseUrl = url) => ({
    baseUrl,
    apiKeyEnv: 'E2E_LLM_KEY',
    model: 'test-model',
    retry: { baseDelayMs: 5, maxDelayMs: 50 },
    circuit: { failureThreshold: 8, probeIntervalMs: 1000 },
    ...over,
  });
  const ws = workspace(url, { llm: llmConfig(llm) });
  const ingest = cli(['ingest', ARTICLES, '--config', ws.config]);
  if (ingest.status !== 0) throw new Error(`ingest: ${ingest.stderr}`);
  /** fix: the same folder, the config without the mistake (and pointed at `to`, if given). */
  const fix = (to?: string) => {
    const config = JSON.parse(readFileSync(ws.config, 'utf8'));
    writeFileSync(ws.config, JSON.stringify({ ...config, llm: llmConfig({}, to) }));
  };
  return { ...ws, fix };
}

const ids = (qa: { candidate: { id: string } }[]) => qa.map((q) => q.candidate.id).sort();

describe('an endpoint that refuses every request: the run stops non-zero, spends nothing, and a fixed config gives the same QA', () => {
  let server: LlmServer;
  let control: string[];

  const serve = async (options: ServerOptions) =>
    start({ responder: pipelineResponder, models: ['test-model'], apiKey: KEY, ...options });

  beforeAll(async () => {
    server = await serve({});
    const good = ingested(server.url);
    const run = await runUntilIdle(good.config);
    expect(run.code, run.stderr).toBe(0);
    control = ids(await keptValues(good.dir));
    expect(control.length).toBeGreaterThan(0);
  }, 300_000);
  afterAll(() => server?.stop());

  it.each([
    [
      'a mistyped model',
      { model: 'test-modl' },
      {},
      /fix llm\.model:.*The server said \(404\): The model `test-modl` does not exist/,
    ],
    [
      'a wrong API key',
      {},
      { E2E_LLM_KEY: 'wrong-key' },
      /fix llm\.apiKeyEnv:.*The server said \(401\): Incorrect API key/,
    ],
  ] as const)(
    '%s: exits non-zero within 60 s with 0 dead letters; fixed, the same QA as a run without the mistake',
    async (_, llm, env, says) => {
      const ws = ingested(server.url, llm);
      const wrong = await runUntilIdle(ws.config, { env });
      expect(wrong.code).not.toBe(0);
      expect(wrong.seconds).toBeLessThan(60);
      process.stdout.write(`${_}: run --until-idle exited ${wrong.code} in ${wrong.seconds.toFixed(1)} s\n`);
      // The last line: the key to fix and the server's words.
      expect(wrong.stderr).toMatch(new RegExp(`^bioalchemy: stopped: .*${says.source}`, 'm'));
      expect(wrong.stdout).toMatch(/^dead letters by code: none$/m);
      expect(await topicValues(ws.dir, 'dlq')).toEqual([]);
      // The key is never printed.
      expect(wrong.stderr).not.toContain('wrong-key');

      ws.fix();
      const fixed = await runUntilIdle(ws.config);
      expect(fixed.code, fixed.stderr).toBe(0);
      expect(ids(await keptValues(ws.dir))).toEqual(control);
    },
    300_000,
  );

  it.each([
    ['the same 500', 'server-error', 500, 'internal error \\(test fault\\)'],
    [
      'the same 400 (a parameter refused for every input)',
      'bad-request',
      400,
      'bad request \\(test fault\\)',
    ],
  ] as const)(
    'a server that answers every request with %s: exits non-zero within 60 s naming its message',
    async (what, kind, status, message) => {
      const broken = await serve({ faults: { rate: 1, kinds: [kind] } });
      try {
        const ws = ingested(broken.url);
        const run = await runUntilIdle(ws.config);
        expect(run.code).not.toBe(0);
        expect(run.seconds).toBeLessThan(60);
        process.stdout.write(`${what}: run --until-idle exited ${run.code} in ${run.seconds.toFixed(1)} s\n`);
        expect(run.stderr).toMatch(
          new RegExp(`^bioalchemy: .*The server said \\(${status}\\): ${message}`, 'm'),
        );
        expect(await topicValues(ws.dir, 'dlq')).toEqual([]);
        // Every request sent is counted, failed ones included.
        const sent = Number(run.stdout.match(/^LLM: \d+ calls paid \((\d+) requests sent/m)?.[1]);
        expect(sent).toBe(broken.stats().requests);
        expect(run.stdout).toMatch(new RegExp(`http ${status} ${broken.stats().requests}`));
      } finally {
        await broken.stop();
      }
    },
    120_000,
  );

  it('a server whose every reply is no chat completion (a web page, 200): exits non-zero within 60 s naming it, nothing committed, nothing dead-lettered', async () => {
    const page = await serve({ faults: { rate: 1, kinds: ['unreadable'] } });
    try {
      const ws = ingested(page.url);
      const run = await runUntilIdle(ws.config);
      expect(run.code).not.toBe(0);
      expect(run.seconds).toBeLessThan(60);
      process.stdout.write(
        `every reply unreadable: run --until-idle exited ${run.code} in ${run.seconds.toFixed(1)} s\n`,
      );
      // One clear error: the key to fix, and what came back.
      expect(run.stderr).toMatch(
        /^bioalchemy: stopped: .*fix llm\.baseUrl: .*no chat completion.*The server said: the reply is no chat completion \(Content-Type text\/html/m,
      );
      expect(run.stderr.match(/^bioalchemy: /gm)).toHaveLength(1);
      expect(await topicValues(ws.dir, 'dlq')).toEqual([]);
      expect(await topicValues(ws.dir, 'qa.candidates')).toEqual([]);
      expect(run.stdout).toMatch(new RegExp(`unreadable ${page.stats().requests}\\b`));
    } finally {
      await page.stop();
    }
  }, 120_000);

  it('SIGTERM with a call in flight to a server that never answers: exits within 10 s, the input uncommitted', async () => {
    const silent = await serve({ latency: { kind: 'fixed', ms: 600_000 } });
    try {
      const ws = ingested(silent.url);
      let signalledAt = 0;
      const run = await runUntilIdle(ws.config, {
        onStart: (child) => {
          void until('a call in flight', async () => (silent.stats().inFlight > 0 ? true : undefined)).then(
            () => {
              signalledAt = performance.now();
              child.kill('SIGTERM');
            },
          );
        },
      });
      const afterSignal = (performance.now() - signalledAt) / 1000;
      expect(signalledAt).toBeGreaterThan(0);
      expect(afterSignal).toBeLessThan(10);
      process.stdout.write(
        `SIGTERM with a call in flight: exited ${run.code} ${afterSignal.toFixed(1)} s after it\n`,
      );
      expect(await topicValues(ws.dir, 'dlq')).toEqual([]);
      expect(await topicValues(ws.dir, 'qa.candidates')).toEqual([]);
      expect(run.stdout).toMatch(/aborted \d+/);
      // Nothing was spent: the same folder against an answering server gives the QA of a good run.
      ws.fix(server.url);
      const again = await runUntilIdle(ws.config);
      expect(again.code, again.stderr).toBe(0);
      expect(ids(await keptValues(ws.dir))).toEqual(control);
    } finally {
      await silent.stop();
    }
  }, 120_000);
});
