import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EndpointMemory } from '../../llm/index.js';
import type { EndpointFactRecord } from '../../schemas/llm.js';
import { openRuntime } from '../../topology/runtime/open.js';
import { DIALECTS } from '../llm-server/dialects.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { start } from '../llm-server/server.js';
import { cli, requestsByOutcome, runUntilIdle, topicValues, workspace } from './helpers.js';

const SAMPLES = fileURLToPath(new URL('../../examples/articles', import.meta.url));

/**
 * What the layer learns of an endpoint is kept on the log (llm.endpoints, issue 52): a restart
 * pays no refused request again and starts at the concurrency the server took. The server speaks
 * llama-cpp-python's dialect (response_format json_schema is a 500) with two decoding slots it
 * does not state. test/services/endpoint-memory-kafka.test.ts runs the same on Kafka.
 */
describe('what is learned of an endpoint survives a restart', () => {
  it('the second run sends no request the server refuses: the dialect learned is kept on the log', async () => {
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
      const facts = (await topicValues<EndpointFactRecord>(dir, 'llm.endpoints')).map((r) => r.facts);
      expect(facts).toContainEqual({ dialect: { responseFormat: 'json_object' } });
      expect(facts).toContainEqual({ concurrencyLimit: expect.any(Number) });

      server.resetStats();
      const second = await runUntilIdle(config, { extraArgs: ['--max-articles', '1'] });
      expect(second.code, second.stderr).toBe(0);
      expect(server.stats().requests).toBeGreaterThan(0);
      expect(server.stats().refusedByDialect).toEqual({});
      expect(Object.keys(requestsByOutcome(second.stdout))).toEqual(['answered']);
      expect(second.stdout).not.toMatch(/refused a parameter/);

      // After a server changes: forgotten, the next start knows nothing of it.
      const forget = cli(['llm', 'forget', '--endpoint', server.url, '--config', config]);
      expect(forget.status, forget.stderr).toBe(0);
      expect(forget.stdout).toMatch(/^forgot [1-9]\d* facts of /);
      const runtime = await openRuntime(`file:${dir}/log`);
      try {
        expect((await EndpointMemory.open(runtime)).get(server.url, 'test-model')).toEqual({});
      } finally {
        await runtime.close();
      }
    } finally {
      await server.stop();
    }
  }, 240_000);
});
