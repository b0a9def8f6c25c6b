import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Config } from '../../schemas/config.js';
import { type Feeding, startFeeding } from '../../server/index.js';
import { type LlmServer, start } from '../llm-server/server.js';

// The verifier end to end, as `run` wires it (issue 45, item 3): the config's reward.verifier, the
// feeder's /v1/reward over HTTP, the Python compute_score asking it about what its rules leave
// undecided, and /metrics counting. The test LLM server is the verifier.

// Run asynchronously: the feeder answering it is in this process.
const PYTHON = join(new URL('../..', import.meta.url).pathname, '.deploy/py-venv/bin/python');
const KEY_ENV = 'BIOALCHEMY_TEST_VERIFIER_FEEDER_KEY';
const GT = { answer: 'adjacent to the epidermis', kind: 'free-form', options: [], aliases: [] };
const BY_MEANING = 'Looking at the tissue layers, the hypodermis lies directly beneath the epidermis.';

let llm: LlmServer;
let feeding: Feeding;
let dir: string;
const registry = new Registry();

beforeAll(async () => {
  llm = await start({
    responder: (r) =>
      JSON.stringify({
        verdict: /beneath the epidermis/.test(String(r.messages.at(-1)?.content)) ? 'correct' : 'incorrect',
      }),
  });
  dir = mkdtempSync(join(tmpdir(), 'verifier-feeder-'));
  const config = Config.parse({
    llm: { baseUrl: llm.url, model: 'verifier', apiKeyEnv: KEY_ENV },
    feeder: { state: join(dir, 'feeder.sqlite') },
    server: { port: 0 },
    reward: { verifier: { deadlineMs: 3_000 } },
  });
  feeding = await startFeeding(config, {
    log: pino({ level: 'silent' }),
    serve: true,
    registry,
    env: { [KEY_ENV]: 'sk-test' },
  });
});
afterAll(async () => {
  await feeding?.close();
  await llm?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('reward.verifier through the feeder', () => {
  it('serves /v1/reward with the verifier, journaled beside the feeder, and counts on /metrics', async () => {
    const res = await fetch(`${feeding.url}/v1/reward`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'free-form', ground_truth: GT.answer, output: BY_MEANING }),
    });
    expect(await res.json()).toMatchObject({ score: 1, decidedBy: 'verifier' });
    expect(existsSync(join(dir, 'verifier.sqlite'))).toBe(true);
    const metrics = await registry.metrics();
    expect(metrics).toMatch(/bioalchemy_reward_decisions_total\{by="verifier"\} 1/);
    expect(llm.stats().requests).toBe(1);
  });

  it('is reached from the Python compute_score for what its rules leave undecided, and only that', async () => {
    expect(existsSync(PYTHON), `${PYTHON} missing: bash deploy/py-venv.sh`).toBe(true);
    const script = [
      'import json, sys',
      'from bioalchemy_client.reward import compute_score',
      'gt, url = json.loads(sys.argv[1]), sys.argv[2]',
      `print(json.dumps([compute_score("b", o, gt, verifier_url=url) for o in sys.argv[3:]]))`,
    ].join('\n');
    const outputs = [
      BY_MEANING,
      'The layer sits deep in the vascular cylinder.',
      'The answer is adjacent to the epidermis.',
    ];
    const before = llm.stats().requests;
    const r = await promisify(execFile)(
      PYTHON,
      ['-c', script, JSON.stringify(GT), feeding.url!, ...outputs],
      {
        encoding: 'utf8',
        cwd: join(new URL('../..', import.meta.url).pathname, 'clients/python'),
      },
    );
    expect(JSON.parse(r.stdout)).toEqual([1, 0, 1]);
    // The first was answered before (cached), the second is a new call, the third the rules decided.
    expect(llm.stats().requests - before).toBe(1);
  });
});
