import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, FIXTURES, workspace } from '../e2e/helpers.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, start } from '../llm-server/server.js';

// Secrets (the LLM API key, the feeder and dashboard tokens, CLICKHOUSE_PASSWORD) never appear in
// logs, errors or metrics: a whole run at log level debug, with an LLM endpoint that echoes the key
// in its error bodies the way real providers do, then every byte of its output, of /metrics, of the
// dashboard's and the feeder's answers (refusals included) and of the data folder is searched.

const SECRETS = {
  llm: 'sk-test-LLMKEY-4b1d9e7a0c2f46e8',
  feeder: 'feeder-TOKEN-91c3a7e5d20b',
  dashboard: 'dashboard-TOKEN-5e8f02c4b7a1',
  clickhouse: 'clickhouse-PASSWORD-c0ffee5ecret',
};

/** The secret or any recognisable piece of it (a provider may echo a key half-masked). */
function leaks(text: string): string[] {
  const found: string[] = [];
  for (const [name, secret] of Object.entries(SECRETS)) {
    const pieces = [secret, secret.slice(-12), secret.slice(0, 16), encodeURIComponent(secret)];
    pieces.push(Buffer.from(secret).toString('base64').slice(0, 16));
    for (const p of pieces) if (text.includes(p)) found.push(`${name} (${p})`);
  }
  return found;
}

const env = {
  ...process.env,
  E2E_LLM_KEY: SECRETS.llm,
  BIOALCHEMY_FEEDER_TOKEN: SECRETS.feeder,
  BIOALCHEMY_DASHBOARD_TOKEN: SECRETS.dashboard,
  CLICKHOUSE_PASSWORD: SECRETS.clickhouse,
  BIOALCHEMY_LOG_LEVEL: 'debug',
};

describe('secrets in a whole run', () => {
  let llm: LlmServer;
  let proxy: Server;
  let proxyUrl = '';
  const keysSeen = new Set<string>();
  let echoed = 0;
  let poisoned: string | undefined;
  beforeAll(async () => {
    llm = await start({ responder: pipelineResponder });
    // In front of the test LLM: records the key it is sent, and answers some calls with an error
    // body that quotes it (as OpenAI's "Incorrect API key provided: sk-…" does), to be retried.
    proxy = createServer(async (req, res) => {
      keysSeen.add(String(req.headers.authorization));
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = Buffer.concat(chunks).toString();
      // One prompt is refused every time (its passage ends as a dead letter, whose reason is the
      // error), and the first few others once each (retried past). Prompts only: the GETs (run's
      // preflight of /models, the capacity the server states at /props) are passed on.
      if (req.method === 'POST') poisoned ??= body;
      if (req.method === 'POST' && (body === poisoned || echoed < 5)) {
        echoed++;
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            error: { message: `upstream refused ${req.headers.authorization}`, type: 'server_error' },
          }),
        );
        return;
      }
      const upstream = await fetch(`${llm.url}${req.url!.replace(/^\/v1/, '')}`, {
        method: req.method!,
        headers: { 'content-type': 'application/json' },
        // run's preflight reads GET /models: fetch refuses a body on a GET.
        body: req.method === 'GET' || req.method === 'HEAD' ? undefined : Buffer.concat(chunks),
      });
      // The upstream's own Content-Type: the layer reads a body by it (events or one JSON).
      res.writeHead(upstream.status, {
        'content-type': upstream.headers.get('content-type') ?? 'application/json',
      });
      res.end(Buffer.from(await upstream.arrayBuffer()));
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/v1`;
  });
  afterAll(async () => {
    await new Promise((resolve) => proxy.close(resolve));
    await llm.stop();
  });

  it('never shows a secret in output, logs, errors, /metrics, HTTP answers or the data folder', async () => {
    const ws = workspace(proxyUrl, {
      llm: {
        baseUrl: proxyUrl,
        apiKeyEnv: 'E2E_LLM_KEY',
        model: 'test-model',
        retry: { baseDelayMs: 5, maxDelayMs: 20, maxAttempts: 8 },
      },
    });
    let output = '';
    const ingest = spawnSync(
      process.execPath,
      [BIN, 'ingest', `${FIXTURES}jats`, `${FIXTURES}text`, '--config', ws.config],
      {
        encoding: 'utf8',
        env,
      },
    );
    expect(ingest.status, ingest.stderr).toBe(0);
    output += ingest.stdout + ingest.stderr;

    // Served off loopback, so both tokens are in force.
    const child: ChildProcess = spawn(
      process.execPath,
      [
        BIN,
        'run',
        '--host',
        '0.0.0.0',
        '--port',
        '0',
        '--dashboard-host',
        '0.0.0.0',
        '--dashboard-port',
        '0',
        '--log-level',
        'debug',
        '--config',
        ws.config,
      ],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (c: Buffer) => {
      stdout += c;
    });
    child.stderr!.on('data', (c: Buffer) => {
      stderr += c;
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const urlOf = async (msg: string): Promise<string> => {
      const deadline = Date.now() + 120_000;
      for (;;) {
        for (const line of stderr.split('\n'))
          if (line.includes(`"msg":"${msg}"`))
            return (JSON.parse(line) as { url: string }).url.replace('0.0.0.0', '127.0.0.1');
        if (Date.now() > deadline) throw new Error(`no "${msg}" line: ${stderr.slice(-2000)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const answers: string[] = [];
    try {
      const feeder = await urlOf('feeder API');
      const dashboard = await urlOf('dashboard');
      const get = async (url: string, token?: string, init: RequestInit = {}) => {
        const res = await fetch(url, {
          ...init,
          headers: { ...(init.headers ?? {}), ...(token ? { authorization: `Bearer ${token}` } : {}) },
        });
        const body = await res.text();
        answers.push(`${res.status} ${JSON.stringify([...res.headers])} ${body}`);
        return { status: res.status, body };
      };
      // The pipeline runs until the sampler's mix reaches the feeder.
      const deadline = Date.now() + 240_000;
      for (;;) {
        const s = await get(`${feeder}/v1/status`, SECRETS.feeder);
        if (s.status === 200 && (JSON.parse(s.body) as { selected: number }).selected > 0) break;
        if (Date.now() > deadline) throw new Error(`no mix reached the feeder: ${stderr.slice(-3000)}`);
        await new Promise((r) => setTimeout(r, 250));
      }
      const post = (path: string, body: unknown, token = SECRETS.feeder) =>
        get(`${feeder}${path}`, token, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const lease = await post('/v1/lease', { run: 'secrets', rank: 0, worldSize: 1, batchSize: 2 });
      expect(lease.status).toBe(200);
      const leased = JSON.parse(lease.body) as { leaseId: string; batch: { id: string } };
      const ack = await post('/v1/ack', {
        run: 'secrets',
        batchId: leased.batch.id,
        leaseId: leased.leaseId,
      });
      expect(ack.status, ack.body).toBe(200);
      for (const path of ['/v1/status', '/v1/runs/secrets', '/openapi.json', '/v1/runs/nope'])
        await get(`${feeder}${path}`, SECRETS.feeder);
      await post('/v1/ack', { run: 'secrets', batchId: 'x', leaseId: 'y' });
      await post('/v1/lease', { run: 'secrets', rank: 'zero' });
      // Refusals: a wrong token, the other server's token, none at all.
      for (const token of [undefined, 'wrong', SECRETS.dashboard]) await get(`${feeder}/v1/status`, token);
      for (const token of [undefined, 'wrong', SECRETS.feeder]) await get(`${dashboard}/metrics`, token);
      for (const path of [
        '/metrics',
        '/api/snapshot',
        '/api/panels/llm',
        '/api/panels/feeder',
        '/',
        '/assets/app.js',
        '/api/panels/nope',
      ])
        await get(`${dashboard}${path}`, SECRETS.dashboard);
      const metrics = answers.find((a) => a.startsWith('200') && a.includes('# HELP'));
      expect(metrics).toBeDefined();
      expect(metrics).toContain('bioalchemy_');
    } finally {
      child.kill('SIGINT');
      await exited;
    }
    output += stdout + stderr + answers.join('\n');

    // The key was in use, and the endpoint quoted it back in errors the run retried past.
    expect([...keysSeen]).toEqual([`Bearer ${SECRETS.llm}`]);
    expect(echoed).toBeGreaterThan(8);
    expect(leaks(output)).toEqual([]);

    // Nothing the run stored holds one either: the log, the feeder's file, chdb's folder.
    const files: string[] = [];
    const visit = (p: string): void => {
      if (!statSync(p).isDirectory()) files.push(p);
      else for (const e of readdirSync(p)) visit(join(p, e));
    };
    visit(ws.dir);
    for (const f of files) {
      if (f.endsWith('config.json')) continue;
      expect(leaks(readFileSync(f).toString('latin1')), f).toEqual([]);
    }
  }, 400_000);

  it('a ClickHouse server refusing the password: the error names the server, not the password', () => {
    const ws = workspace('http://127.0.0.1:9/v1', { clickhouse: 'http://bioalchemy@127.0.0.1:9/default' });
    const r = spawnSync(process.execPath, [BIN, 'mix', '--json', '--config', ws.config], {
      encoding: 'utf8',
      env,
    });
    expect(r.status).not.toBe(0);
    expect(r.stderr.length).toBeGreaterThan(0);
    expect(leaks(r.stdout + r.stderr)).toEqual([]);
  });
});
