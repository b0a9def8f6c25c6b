import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Feeder } from '../../processors/feeder/feeder.js';
import { buildServer } from '../../server/feeder-api.js';
import { mix, poolItems } from './fixtures.js';

// HTTP payloads fuzzed from the feeder's OpenAPI document by schemathesis (PyPI, in the venv CI
// makes: .ci/run). Positive and negative cases for every operation: never a 5xx, every answer
// conforms to the document, and a refused request (4xx) leaves the feeder's file exactly as it was.
// The dashboard publishes no OpenAPI document (it is a page and its JSON); its routes take no
// body and are covered by test/dashboard.
const SCHEMATHESIS = resolve('.deploy/py-venv/bin/schemathesis');

describe('feeder API fuzzed by schemathesis', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bioalchemy-fuzz-'));
  const file = join(dir, 'feeder.sqlite');
  let feeder: Feeder;
  let app: ReturnType<typeof buildServer>;
  let url = '';
  let reader: Database.Database;
  const checked = { refused: 0, changedByRefused: [] as string[], serverErrors: [] as string[] };

  /** A digest of every row of every table of the feeder's file. */
  const digest = () => {
    const h = createHash('sha256');
    const tables = reader
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .all() as {
      name: string;
    }[];
    for (const { name } of tables)
      h.update(name).update(JSON.stringify(reader.prepare(`SELECT * FROM "${name}"`).raw().all()));
    return h.digest('hex');
  };

  beforeAll(async () => {
    feeder = Feeder.open(file, { batchSize: 4, leaseMs: 60_000 });
    feeder.addItems(poolItems(200));
    feeder.setMix(mix(1));
    reader = new Database(file, { readonly: true });
    app = buildServer(feeder, { bodyLimit: 64 * 1024 });
    const before = new WeakMap<object, string>();
    app.addHook('onRequest', async (req) => {
      before.set(req, digest());
    });
    app.addHook('onResponse', async (req, reply) => {
      if (reply.statusCode >= 500)
        checked.serverErrors.push(`${req.method} ${req.url} -> ${reply.statusCode}`);
      if (reply.statusCode < 400) return;
      checked.refused++;
      if (before.get(req) !== digest())
        checked.changedByRefused.push(`${req.method} ${req.url} -> ${reply.statusCode}`);
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await app.close();
    reader.close();
    feeder.close();
  });

  it('no 5xx, answers as documented, refused requests change nothing', async () => {
    expect(
      existsSync(SCHEMATHESIS),
      `${SCHEMATHESIS} missing: pip install schemathesis into .deploy/py-venv (see .ci/run)`,
    ).toBe(true);
    // Async: the server answers from this process's event loop.
    const result = await new Promise<{ code: number | null; out: string }>((resolve, reject) => {
      const child = spawn(
        SCHEMATHESIS,
        [
          'run',
          `${url}/openapi.json`,
          '--checks',
          'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance',
          '--max-examples',
          '40',
          '--seed',
          '15',
          '--generation-deterministic',
          '--workers',
          '1',
          '--no-color',
          '--request-timeout',
          '10',
        ],
        // In the scratch folder: schemathesis keeps its example database in ./.schemathesis.
        { cwd: dir, env: { ...process.env, SCHEMATHESIS_HOOKS: '' }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      child.stdout.on('data', (c: Buffer) => {
        out += c;
      });
      child.stderr.on('data', (c: Buffer) => {
        out += c;
      });
      child.on('error', reject);
      child.on('exit', (code) => resolve({ code, out }));
    });
    expect(result.code, result.out.slice(-6000)).toBe(0);
    expect(result.out).toMatch(/\d+ passed/);
    expect(checked.serverErrors).toEqual([]);
    // The hooks saw the fuzzing, refusals included, and no refusal wrote anything.
    expect(checked.refused).toBeGreaterThan(20);
    expect(checked.changedByRefused).toEqual([]);
  }, 280_000);
});
