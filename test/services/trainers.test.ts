import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BIN, cli, workspace } from '../e2e/helpers.js';
import { classifiedOf } from '../sampler/classified.js';
import { generateItems } from '../sampler/generated.js';
import { until } from '../until.js';
import { clickHouseServer, type ServerDatabase } from './clickhouse-server.js';

// Real trainers on `bioalchemy run`: TRL's GRPOTrainer (CPU, a tiny Qwen2 built from a config) and
// verl's dataset and reward hooks, from the Python suites clients/python/tests/test_{trl,verl}.py,
// run in the trainer venv against a feeder serving a mix of 25 classified QA. The acked rewards go
// to a database of this test's own on the ClickHouse server. The venv is deploy/trainer-venv.sh's
// (the services project's global setup makes it; so does this test, where it is missing).
const PYTHON = '.deploy/trainer-venv/bin/python';

const Report = z.object({ run: z.string(), acked: z.number().int() });

describe('real trainers on the feeder of bioalchemy run', () => {
  const server = clickHouseServer();
  let db: ServerDatabase;
  let ws: { dir: string; config: string };
  let child: ChildProcess;
  let exited: Promise<number | null>;
  let feederUrl: string;

  beforeAll(async () => {
    // Cached (about a second) when the global setup or an earlier run made it; cold, 190-270 s and 5.6 GB.
    const venv = spawnSync('bash', ['deploy/trainer-venv.sh'], { stdio: ['ignore', 2, 2], timeout: 840_000 });
    expect(venv.status, 'deploy/trainer-venv.sh failed').toBe(0);
    expect(existsSync(PYTHON), `${PYTHON} missing after deploy/trainer-venv.sh`).toBe(true);
    db = await server.freshDatabase('trainers');
    // No LLM is called: the QA arrive classified. The port is closed, so a call would fail loudly.
    ws = workspace('http://127.0.0.1:9/v1', { clickhouse: db.url });
    const lines = generateItems(25, 3, 'trainer').map((it, i) => JSON.stringify(classifiedOf(it, i)));
    const produced = cli(['produce', 'qa.classified', '--config', ws.config], lines.join('\n'));
    expect(produced.status, produced.stderr).toBe(0);
    child = spawn(process.execPath, [BIN, 'run', '--config', ws.config, '--port', '0', '--no-dashboard'], {
      env: { ...process.env, E2E_LLM_KEY: 'test-key', BIOALCHEMY_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk;
    });
    // On two shared cores `run` may take a while to start; if it stops instead, say why.
    feederUrl = await until(
      'the feeder API',
      async () => {
        if (child.exitCode !== null) throw new Error(`run exited ${child.exitCode}: ${stderr.slice(-3000)}`);
        const line = stderr.split('\n').find((l) => l.includes('"msg":"feeder API"'));
        return line ? (JSON.parse(line) as { url: string }).url : undefined;
      },
      150_000,
    );
    // The sampler's mix reaches the feeder.
    await until(
      'a mix selecting items',
      async () => {
        const s = (await (await fetch(`${feederUrl}/v1/status`)).json()) as { selected: number };
        return s.selected > 0 ? s : undefined;
      },
      120_000,
    );
  }, 1_200_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGINT');
      await exited;
    }
    await db?.dispose();
    await server.close();
    if (ws) rmSync(ws.dir, { recursive: true, force: true });
  });

  it('TRL GRPOTrainer trains two epochs, every item acked once per epoch with a reward in ClickHouse; verl loaders lease and its reward acks', async () => {
    const report = join(ws.dir, 'trainers.jsonl');
    const pytest = spawn(
      PYTHON,
      [
        '-m',
        'pytest',
        'clients/python/tests/test_trl.py',
        'clients/python/tests/test_verl.py',
        '-q',
        '-p',
        'no:cacheprovider',
      ],
      {
        env: {
          ...process.env,
          BIOALCHEMY_FEEDER_URL: feederUrl,
          BIOALCHEMY_FEEDER_RUN_PREFIX: 'ci',
          BIOALCHEMY_TRAINER_REPORT: report,
          OMP_NUM_THREADS: '1',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    pytest.stdout!.on('data', (c: Buffer) => {
      out += c;
    });
    pytest.stderr!.on('data', (c: Buffer) => {
      out += c;
    });
    const code = await new Promise<number | null>((resolve) => pytest.on('exit', resolve));
    expect(code, out.slice(-4000)).toBe(0);
    expect(out).toMatch(/\d+ passed/);
    // The summary line only: the trainers' own logs may say "error" in passing.
    expect(out).not.toMatch(/\d+ (skipped|failed|errors?)\b/);

    // The example's acks, each a reward row keyed by (run, QA id, step): one prompt per step, so
    // one row per acked item.
    const [trl] = readFileSync(report, 'utf8')
      .trim()
      .split('\n')
      .map((l) => Report.parse(JSON.parse(l)));
    expect(trl!.acked).toBeGreaterThan(0);
    // The run name is the feeder's RunName ([A-Za-z0-9._:-]): safe to quote (18.16 has no query parameters).
    expect(trl!.run).toMatch(/^[A-Za-z0-9._:-]+$/);
    const n = await until('the rewards in ClickHouse', async () => {
      const rs = await server.admin.query({
        query: `SELECT count() AS n FROM (SELECT DISTINCT qa_id, step FROM ${db.name}.rewards WHERE run = '${trl!.run}')`,
        format: 'JSONEachRow',
      });
      const [row] = z.array(z.object({ n: z.coerce.number() })).parse(await rs.json());
      return row && row.n >= trl!.acked ? row.n : undefined;
    });
    expect(n).toBe(trl!.acked);
  }, 900_000);
});
