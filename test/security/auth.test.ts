import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Feeder } from '../../processors/feeder/feeder.js';
import { guard, needsToken } from '../../server/auth.js';
import { openApiDocument, ROUTES, startServer } from '../../server/feeder-api.js';
import { cliAsync, workspace } from '../e2e/helpers.js';
import { mix, poolItems } from '../feeder/fixtures.js';

// Every HTTP endpoint the engine serves needs the bearer token unless bound to loopback: the feeder
// API here (every route of its OpenAPI document, unknown routes too), the dashboard in
// test/dashboard/auth.test.ts, both through the one guard of server/auth.ts. Prometheus /metrics
// of `run --metrics-port` binds 127.0.0.1 only.

const TOKEN = 'feeder-test-token-9c2e';

const bodies: Record<string, unknown> = {
  '/v1/lease': { run: 'auth', rank: 0, worldSize: 1 },
  '/v1/ack': { run: 'auth', batchId: 'x', leaseId: 'y' },
  '/v1/extend': { run: 'auth', batchId: 'x', leaseId: 'y' },
  '/v1/reward': { output: 'A', ground_truth: 'A', kind: 'multiple-choice' },
};

function requests(): { method: string; path: string; body?: string }[] {
  const out: { method: string; path: string; body?: string }[] = ROUTES.map((r) => ({
    method: r.method,
    path: r.path.replace('{run}', 'auth'),
    ...(r.method === 'POST' ? { body: JSON.stringify(bodies[r.path] ?? {}) } : {}),
  }));
  out.push({ method: 'GET', path: '/openapi.json' }, { method: 'GET', path: '/no/such/route' });
  return out;
}

describe('feeder API off loopback', () => {
  let feeder: Feeder;
  let server: Awaited<ReturnType<typeof startServer>>;
  let port = 0;
  beforeAll(async () => {
    feeder = Feeder.open(':memory:', { batchSize: 4, leaseMs: 60_000 });
    feeder.addItems(poolItems(100));
    feeder.setMix(mix(1));
    // 0.0.0.0 is not loopback: the guard is on, whichever address the request comes from.
    server = await startServer(feeder, { host: '0.0.0.0', port: 0, bodyLimit: 64 * 1024, token: TOKEN });
    port = Number(new URL(server.url).port);
  });
  afterAll(async () => {
    await server.close();
    feeder.close();
  });

  const send = (r: { method: string; path: string; body?: string }, authorization?: string) =>
    fetch(`http://127.0.0.1:${port}${r.path}`, {
      method: r.method,
      headers: {
        ...(r.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(authorization === undefined ? {} : { authorization }),
      },
      ...(r.body === undefined ? {} : { body: r.body }),
    });

  it('covers every route of the OpenAPI document', () => {
    const documented = Object.keys(openApiDocument().paths as object);
    expect(documented.sort()).toEqual([...new Set(ROUTES.map((r) => r.path))].sort());
  });

  it('refuses every route without the token, with a wrong one, or another scheme: 401, nothing changes', async () => {
    const before = feeder.status();
    for (const r of requests())
      for (const auth of [
        undefined,
        'Bearer wrong',
        `Bearer ${TOKEN}x`,
        `Basic ${TOKEN}`,
        TOKEN,
        'Bearer ',
      ]) {
        const res = await send(r, auth);
        expect(res.status, `${r.method} ${r.path} with ${auth}`).toBe(401);
        expect(res.headers.get('www-authenticate')).toBe('Bearer realm="bioalchemy feeder API"');
        const text = await res.text();
        expect(JSON.parse(text)).toEqual({
          error: 'unauthorized',
          reason: 'a bearer token is required on this address',
        });
        expect(text).not.toContain(TOKEN);
      }
    expect(feeder.status()).toEqual(before);
    expect(() => feeder.runStatus('auth')).toThrow();
  });

  it('serves every route with the token; /healthz is open', async () => {
    for (const r of requests()) {
      const res = await send(r, `Bearer ${TOKEN}`);
      expect(res.status, `${r.method} ${r.path}`).not.toBe(401);
      expect(res.status).toBeLessThan(500);
    }
    expect((await send({ method: 'GET', path: '/healthz' })).status).toBe(200);
    const lease = await send(
      { method: 'POST', path: '/v1/lease', body: JSON.stringify(bodies['/v1/lease']) },
      `Bearer ${TOKEN}`,
    );
    expect(((await lease.json()) as { status: string }).status).toBe('leased');
  });
});

describe('the guard', () => {
  it('is off on loopback, on elsewhere, and refuses to start off loopback without a token', async () => {
    expect(needsToken({ host: '127.0.0.1', tokenEnv: 'X', what: 'feeder API' })).toBe(false);
    expect(needsToken({ host: '::1', tokenEnv: 'X', what: 'feeder API' })).toBe(false);
    expect(needsToken({ host: '0.0.0.0', token: 't', tokenEnv: 'X', what: 'feeder API' })).toBe(true);
    expect(() =>
      needsToken({ host: '0.0.0.0', tokenEnv: 'BIOALCHEMY_FEEDER_TOKEN', what: 'feeder API' }),
    ).toThrow(
      'the feeder API on 0.0.0.0 (not a loopback address) needs a bearer token: set BIOALCHEMY_FEEDER_TOKEN',
    );
    const feeder = Feeder.open(':memory:', { batchSize: 4, leaseMs: 60_000 });
    try {
      await expect(startServer(feeder, { host: '0.0.0.0', port: 0, bodyLimit: 1024 })).rejects.toThrow(
        /needs a bearer token/,
      );
      const open = await startServer(feeder, { host: '127.0.0.1', port: 0, bodyLimit: 1024 });
      expect((await fetch(`${open.url}/v1/status`)).status).toBe(200);
      await open.close();
    } finally {
      feeder.close();
    }
    expect(typeof guard).toBe('function');
  });

  it('`run` off loopback without a token (feeder or dashboard): one line, exit 1, nothing left running', async () => {
    const ws = workspace('http://127.0.0.1:9/v1');
    const cases: [string[], RegExp][] = [
      [
        ['--host', '0.0.0.0', '--port', '0', '--no-dashboard'],
        /^bioalchemy: the feeder API on 0\.0\.0\.0 \(not a loopback address\) needs a bearer token: set BIOALCHEMY_FEEDER_TOKEN$/m,
      ],
      [
        ['--port', '0', '--dashboard-host', '0.0.0.0', '--dashboard-port', '0'],
        /^bioalchemy: the dashboard on 0\.0\.0\.0 \(not a loopback address\) needs a bearer token: set BIOALCHEMY_DASHBOARD_TOKEN$/m,
      ],
    ];
    for (const [args, line] of cases) {
      // Found by this test: a refused server left a timer that kept `run` alive after its error.
      const run = await cliAsync(['run', ...args, '--config', ws.config]);
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr).toMatch(line);
    }
  }, 120_000);
});
