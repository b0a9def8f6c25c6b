import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DIALECTS } from '../llm-server/dialects.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { start } from '../llm-server/server.js';
import { cli, requestsByOutcome, runUntilIdle, workspace } from './helpers.js';

const SAMPLES = fileURLToPath(new URL('../../examples/articles', import.meta.url));

/**
 * What the layer learns of an endpoint is kept with the data folder (issue 52): a restart pays no
 * refused request again and starts at the concurrency the server took. The server speaks
 * llama-cpp-python's dialect (response_format json_schema is a 500) with two decoding slots it
 * does not state.
 */
describe('what is learned of an endpoint survives a restart', () => {
  it('the second run sends no request the server refuses: the dialect learned is kept in the data folder', async () => {
    const server = await start({
      responder: pipelineResponder,
      dialect: DIALECTS['llama-cpp-python'],
      slots: 2,
      latency: { kind: 'fixed', ms: 150 },
    });
    try {
      const { dir, config } = workspace(server.url, {
        llm: { baseUrl: server.url, model: 'test-model', apiKeyEnv: 'E2E_LLM_KEY' },
      });
      const ingest = cli(['ingest', SAMPLES, '--config', config]);
      expect(ingest.status, ingest.stderr).toBe(0);

      const first = await runUntilIdle(config, { extraArgs: ['--max-articles', '1'] });
      expect(first.code, first.stderr).toBe(0);
      expect(server.stats().refusedByDialect).toEqual({ 500: expect.any(Number) });
      const kept = JSON.parse(readFileSync(join(dir, 'log', 'llm-endpoints.json'), 'utf8'));
      const facts = Object.values(kept.endpoints)[0] as {
        dialect: { responseFormat: string };
        concurrencyLimit: number;
      };
      expect(facts.dialect.responseFormat).toBe('json_object');
      expect(facts.concurrencyLimit).toBeGreaterThanOrEqual(1);

      server.resetStats();
      const second = await runUntilIdle(config, { extraArgs: ['--max-articles', '1'] });
      expect(second.code, second.stderr).toBe(0);
      expect(server.stats().requests).toBeGreaterThan(0);
      expect(server.stats().refusedByDialect).toEqual({});
      expect(Object.keys(requestsByOutcome(second.stdout))).toEqual(['answered']);
      expect(second.stdout).not.toMatch(/refused a parameter/);
    } finally {
      await server.stop();
    }
  }, 240_000);

  it("a kept file that is not the layer's is an error naming it, at start", async () => {
    const server = await start({ responder: pipelineResponder });
    try {
      const { dir, config } = workspace(server.url);
      const ingest = cli(['ingest', SAMPLES, '--config', config]);
      expect(ingest.status, ingest.stderr).toBe(0);
      writeFileSync(
        join(dir, 'log', 'llm-endpoints.json'),
        JSON.stringify({ version: 1, endpoints: { x: { limit: 'many' } } }),
      );
      const run = await runUntilIdle(config, { extraArgs: ['--max-articles', '1'] });
      expect(run.code).not.toBe(0);
      expect(run.stderr).toMatch(/llm-endpoints\.json: not what the LLM layer keeps of its endpoints/);
      expect(existsSync(join(dir, 'log', 'llm-endpoints.json'))).toBe(true);
    } finally {
      await server.stop();
    }
  }, 120_000);
});
