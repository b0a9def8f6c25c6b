import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { preflightAtStart } from '../../llm/check.js';
import { LlmConfig } from '../../schemas/llm.js';
import { cliAsync, workspace } from '../e2e/helpers.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, start } from '../llm-server/server.js';

const STAGES = ['relevance', 'mcq', 'mcq-quality', 'freeform', 'freeform-grade', 'classify'];

/** `llm check` in a child (async: the test server answers from this process). */
function check(url: string, llm: Record<string, unknown>, key = 'right-key', extra = {}) {
  const ws = workspace(url, {
    ...extra,
    llm: {
      baseUrl: url,
      apiKeyEnv: 'E2E_LLM_KEY',
      model: 'test-model',
      retry: { baseDelayMs: 5, maxDelayMs: 20 },
      ...llm,
    },
  });
  return cliAsync(['llm', 'check', '--config', ws.config], { env: { E2E_LLM_KEY: key } });
}

describe('bioalchemy llm check', () => {
  let server: LlmServer;
  beforeAll(async () => {
    server = await start({ responder: pipelineResponder, models: ['test-model'], apiKey: 'right-key' });
  });
  afterAll(() => server?.stop());

  it('sends each stage once and says what the endpoint accepts', async () => {
    server.resetStats();
    const r = await check(server.url, {});
    expect(r.code, r.stderr).toBe(0);
    for (const stage of STAGES)
      expect(r.stdout).toMatch(new RegExp(`^  ${stage} +ok +model test-model`, 'm'));
    expect(r.stdout.match(/structured output \(json_schema\) accepted/g)).toHaveLength(STAGES.length);
    expect(r.stdout).toMatch(/context: a prompt of \d+ tokens/);
    expect(r.stdout).toMatch(/capacity: the server states none: run finds it from latency, from 1 up to 64/);
    expect(server.stats().requests).toBe(STAGES.length);
  }, 120_000);

  it('says the slots a server states (llama-server GET /props), where the adaptive limit starts', async () => {
    const slotted = await start({ responder: pipelineResponder, slots: 4, statesSlots: true });
    try {
      const r = await check(slotted.url, {}, 'any-key');
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(
        /capacity: the server states 4 slots: run sends up to 4 at once from the start/,
      );
    } finally {
      await slotted.stop();
    }
  }, 120_000);

  it.each([
    [
      'a stage with an unknown model',
      { stages: { classify: { model: 'nope' } } },
      'right-key',
      /^bioalchemy: 1 stage\(s\) cannot run: classify \(fix llm\.stages\.classify\.model\)$/m,
      /The model `nope` does not exist/,
    ],
    [
      'a wrong key',
      {},
      'wrong-key',
      /^bioalchemy: 6 stage\(s\) cannot run: relevance \(fix llm\.apiKeyEnv\)/m,
      /the server said \(401\): Incorrect API key/,
    ],
    [
      'a mistyped model',
      { model: 'test-modl' },
      'right-key',
      /^bioalchemy: 6 stage\(s\) cannot run: relevance \(fix llm\.model\)/m,
      /the server said \(404\): The model `test-modl` does not exist/,
    ],
  ])(
    '%s: names the failing stage and the key to fix, exit 1',
    async (_, llm, key, line, said) => {
      const r = await check(server.url, llm, key);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(line);
      expect(r.stdout).toMatch(said);
      expect(r.stdout).toMatch(/FAIL/);
    },
    120_000,
  );

  it('checks the reward verifier (verify stage) when reward.verifier is set: its verdict must be a token of its format', async () => {
    const verdicts = ['correct', 'maybe'];
    for (const verdict of verdicts) {
      const verifier = await start({
        responder: (request, context) =>
          request.response_format?.json_schema?.name === 'verify'
            ? JSON.stringify({ verdict })
            : pipelineResponder(request, context),
      });
      try {
        const r = await check(verifier.url, {}, 'any-key', { reward: { verifier: { prompt: 'plain' } } });
        if (verdict === 'correct') {
          expect(r.code, r.stderr).toBe(0);
          expect(r.stdout).toMatch(/^ {2}verify +ok +model test-model/m);
          expect(r.stdout).toMatch(/verdict "correct" \(pays\)/);
        } else {
          expect(r.code).toBe(1);
          expect(r.stderr).toMatch(
            /^bioalchemy: 1 stage\(s\) cannot run: verify \(fix reward\.verifier\.prompt\)$/m,
          );
          expect(r.stdout).toMatch(/verdict "maybe": cannot run/);
        }
        expect(verifier.stats().requests).toBe(STAGES.length + 1);
      } finally {
        await verifier.stop();
      }
    }
    // Without a verifier, the verify stage is not sent (the first test: one request per stage).
  }, 240_000);

  it("run's free check at start (GET /models): a refused key, a stage's model not served; nothing when all is well", async () => {
    const config = (llm: Record<string, unknown>) =>
      LlmConfig.parse({ baseUrl: server.url, apiKeyEnv: 'CHECK_KEY', model: 'test-model', ...llm });
    expect(await preflightAtStart(config({}), { CHECK_KEY: 'right-key' })).toEqual([]);
    const key = await preflightAtStart(config({}), { CHECK_KEY: 'wrong-key' });
    expect(key.map((f) => [f.stage, f.configKey])).toEqual([[null, 'llm.apiKeyEnv']]);
    expect(key[0]!.message).toMatch(/^401 Incorrect API key/);
    const model = await preflightAtStart(config({ stages: { classify: { model: 'nope' } } }), {
      CHECK_KEY: 'right-key',
    });
    expect(model.map((f) => [f.stage, f.configKey])).toEqual([['classify', 'llm.stages.classify.model']]);
  });
});
