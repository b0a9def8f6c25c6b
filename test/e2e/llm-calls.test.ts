import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openClickHouse } from '../../analytics/clickhouse.js';
import { spendByStage } from '../../analytics/llm-calls.js';
import { PIPELINE_PROCESSORS } from '../../processors/pipeline.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, start } from '../llm-server/server.js';
import { cli, runUntilIdle, syntheticArticles, topicValues, workspace } from './helpers.js';

// ClickHouse opens only in a process that runs a processor that uses it (issue 21): workers of
// the LLM stages account their calls through the log, and the llm-calls sink writes them.
describe('LLM accounting through the log', () => {
  let server: LlmServer;
  beforeAll(async () => {
    server = await start({ responder: pipelineResponder });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('a stage worker runs with no ClickHouse reachable; the process with the sinks writes its calls once', async () => {
    const ws = workspace(server.url);
    const chdb = JSON.parse(readFileSync(ws.config, 'utf8')).clickhouse as string;
    const setClickHouse = (url: string) =>
      writeFileSync(
        ws.config,
        JSON.stringify({ ...JSON.parse(readFileSync(ws.config, 'utf8')), clickhouse: url }),
      );
    try {
      expect(
        cli(['produce', 'articles', '--key', 'id', '--config', ws.config], syntheticArticles(3)).status,
      ).toBe(0);
      // Nothing listens there: a worker that opened ClickHouse would wait for it, then fail.
      setClickHouse('http://127.0.0.1:1/nowhere');
      const worker = await runUntilIdle(ws.config, {
        extraArgs: ['--processors', PIPELINE_PROCESSORS.join(',')],
      });
      expect(worker.code, worker.stderr).toBe(0);
      const calls = await topicValues(ws.dir, 'llm.calls');
      expect(calls.length).toBeGreaterThan(0);

      setClickHouse(chdb);
      // Twice: the second run has nothing new, and writes no call again.
      for (let i = 0; i < 2; i++) {
        const sinks = await runUntilIdle(ws.config);
        expect(sinks.code, sinks.stderr).toBe(0);
      }
      const analytics = await openClickHouse(chdb);
      try {
        const spend = await spendByStage(analytics);
        expect(spend.reduce((n, s) => n + s.calls, 0)).toBe(calls.length);
      } finally {
        await analytics.close();
      }
    } finally {
      rmSync(ws.dir, { recursive: true, force: true });
    }
  });

  it('a second process on the same chdb folder fails at start with one line that names the way out', async () => {
    const ws = workspace(server.url);
    const chdb = join(ws.dir, 'chdb');
    mkdirSync(chdb, { recursive: true });
    // The folder held by a live process (its pid in the lock file), as a first `run` holds it.
    const holder = spawn('sleep', ['120']);
    try {
      writeFileSync(join(chdb, 'bioalchemy.pid'), String(holder.pid));
      const second = await runUntilIdle(ws.config);
      expect(second.code).not.toBe(0);
      const lines = second.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/in use by another process \(pid \d+\)/);
      expect(lines[0]).toMatch(/"clickhouse"/);
      expect(lines[0]).toMatch(/deploy\/services\.sh/);
    } finally {
      holder.kill();
      rmSync(ws.dir, { recursive: true, force: true });
    }
  });
});
