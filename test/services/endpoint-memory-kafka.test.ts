import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ENDPOINTS_TOPIC } from '../../llm/index.js';
import type { EndpointFactRecord } from '../../schemas/llm.js';
import { KafkaRuntime } from '../../topology/runtime/kafka/index.js';
import { readAll } from '../conformance/suite.js';
import { cli, requestsByOutcome, runUntilIdle, workspace } from '../e2e/helpers.js';
import { DIALECTS } from '../llm-server/dialects.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { start } from '../llm-server/server.js';
import { KAFKA, SCHEMA_REGISTRY } from './env.js';

const ARTICLES = new URL('../../examples/articles', import.meta.url).pathname;
// Through the registry, as a deployment runs: llm.endpoints has a subject like every topic.
const LOG = `kafka://${KAFKA}?client=kafkajs&registry=${encodeURIComponent(SCHEMA_REGISTRY)}`;

/**
 * A Kafka deployment keeps what its workers learn of an endpoint on llm.endpoints (issue 52), as
 * the embedded log does (test/e2e/endpoint-memory.test.ts): a worker started after another, with
 * no folder of its own in common, sends no request the server refuses.
 */
describe('Kafka: what one worker learned of an endpoint, the next starts from', () => {
  it('the second worker sends no refused request and no ramp from 1: the facts are on llm.endpoints', async () => {
    const server = await start({
      responder: pipelineResponder,
      dialect: DIALECTS['llama-cpp-python'],
      slots: 2,
      latency: { kind: 'fixed', ms: 150 },
    });
    const app = `memory-${randomBytes(4).toString('hex')}`;
    // Two workspaces: two workers that share the broker and nothing on disk.
    const [first, second] = [0, 1].map(() => {
      const ws = workspace(server.url, {
        log: LOG,
        app,
        llm: { baseUrl: server.url, model: 'test-model', apiKeyEnv: 'E2E_LLM_KEY' },
      });
      onTestFinished(() => rmSync(ws.dir, { recursive: true, force: true }));
      return ws;
    });
    try {
      const ingest = cli(['ingest', ARTICLES, '--config', first!.config]);
      expect(ingest.status, ingest.stderr).toBe(0);
      const one = await runUntilIdle(first!.config, { extraArgs: ['--max-articles', '1'] });
      expect(one.code, one.stderr).toBe(0);
      expect(server.stats().refusedByDialect).toEqual({ 500: expect.any(Number) });

      // Its subject registered first: the reader takes values off the registry's wire by it.
      const runtime = await KafkaRuntime.open(LOG, { app });
      const facts = await runtime
        .ensureTopics([ENDPOINTS_TOPIC])
        .then(() => readAll(runtime, 'llm.endpoints'))
        .finally(() => runtime.close());
      expect(facts.map((r) => (r.value as EndpointFactRecord).facts)).toContainEqual({
        dialect: { responseFormat: 'json_object' },
      });

      server.resetStats();
      const two = await runUntilIdle(second!.config, { extraArgs: ['--max-articles', '1'] });
      expect(two.code, two.stderr).toBe(0);
      expect(server.stats().requests).toBeGreaterThan(0);
      expect(server.stats().refusedByDialect).toEqual({});
      expect(Object.keys(requestsByOutcome(two.stdout))).toEqual(['answered']);
    } finally {
      await server.stop();
    }
  }, 300_000);
});
