import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { passagesToExtract } from '../../processors/extract.js';
import type { Article } from '../../schemas/article.js';
import { openRuntime } from '../../topology/runtime/open.js';
import { readAll } from '../conformance/suite.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, start } from '../llm-server/server.js';
import {
  cli,
  expectSummaryAddsUp,
  FIXTURES,
  passageCounts,
  runUntilIdle,
  summaryCounts,
  workspace,
} from './helpers.js';

describe('the pipeline under LLM faults', () => {
  let server: LlmServer;
  beforeAll(async () => {
    server = await start({
      responder: pipelineResponder,
      seed: 7,
      latency: { kind: 'lognormal', medianMs: 5, p99Ms: 60 },
      faults: {
        rate: 0.2,
        kinds: ['rate-limit', 'server-error', 'timeout', 'reset', 'truncated', 'schema-break'],
        retryAfterSeconds: 0,
      },
    });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('with 20% mixed faults, ends every passage processed or dead-lettered, and pays for no reply twice', async () => {
    const ws = workspace(server.url, {
      llm: {
        baseUrl: server.url,
        apiKeyEnv: 'E2E_LLM_KEY',
        timeoutMs: 2000,
        retry: { baseDelayMs: 5, maxDelayMs: 50, maxAttempts: 6 },
      },
    });
    expect(
      cli(['ingest', `${FIXTURES}jats`, `${FIXTURES}medline`, `${FIXTURES}text`, '--config', ws.config])
        .status,
    ).toBe(0);
    const run = await runUntilIdle(ws.config);
    expect(run.code, run.stderr).toBe(0);
    const counts = summaryCounts(run.stdout);
    expectSummaryAddsUp(counts, expect);

    // Every passage the articles have (as extract cuts them) has an outcome.
    const runtime = await openRuntime(`file:${ws.dir}/log`);
    const articles = (await readAll(runtime, 'articles')).map((r) => r.value as Article);
    await runtime.close();
    const total = articles.reduce(
      (n, a) => n + passagesToExtract(a, { passageTokens: 400, maxPassages: 8 }).length,
      0,
    );
    const outcomes = passageCounts(run.stdout);
    expect(Object.values(outcomes).reduce((a, b) => a + b, 0)).toBe(total);
    expect(outcomes.questions).toBeGreaterThan(0);

    const stats = server.stats();
    expect(Object.values(stats.byFault).reduce((a, b) => a + (b ?? 0), 0)).toBeGreaterThan(10);
    // A reply that arrived was never asked for again: retries were for faults only.
    expect(Math.max(...Object.values(stats.answeredByPromptHash))).toBe(1);
    const paid = Number(run.stdout.match(/^LLM: (\d+) calls paid \((\d+) requests sent/m)?.[1]);
    const sent = Number(run.stdout.match(/^LLM: \d+ calls paid \((\d+) requests sent/m)?.[1]);
    expect(paid).toBeLessThanOrEqual(Object.keys(stats.answeredByPromptHash).length);
    expect(sent).toBeGreaterThanOrEqual(paid);
    process.stdout.write(
      `faults: ${JSON.stringify(stats.byFault)}; ${run.stdout.match(/^LLM: .*$/m)?.[0]}\n`,
    );
  }, 300_000);
});
