import { type ChildProcess, spawn } from 'node:child_process';
import { networkInterfaces } from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { reasonClass } from '../../schemas/dead-letter.js';
import { isLoopback, tokenMatches } from '../../server/dashboard.js';
import { BIN, cliAsync, workspace } from '../e2e/helpers.js';

const NO_LLM = 'http://127.0.0.1:9/v1';
const TOKEN = 'dashboard-test-token-5f1c';

/** An address of this machine that is not loopback, when it has one (else loopback reaches 0.0.0.0). */
function outsideAddress(): string {
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return '127.0.0.1';
}

/** `bioalchemy dashboard` in a child; resolves with its URL once it listens. */
function dashboard(
  args: string[],
  env: Record<string, string>,
): Promise<{ child: ChildProcess; port: number }> {
  const ws = workspace(NO_LLM);
  const child = spawn(process.execPath, [BIN, 'dashboard', '--config', ws.config, '--port', '0', ...args], {
    env: { ...process.env, BIOALCHEMY_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c;
      const m = out.match(/^http:\/\/\S+:(\d+)$/m);
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.stderr!.on('data', (c: Buffer) => {
      err += c;
    });
    child.on('exit', (code) => reject(new Error(`dashboard exited ${code}: ${err}`)));
  });
}

describe('dashboard access', () => {
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const c of children) c.kill('SIGINT');
  });

  it('tells loopback from other addresses and compares tokens in constant time', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', '::ffff:127.0.0.1'])
      expect(isLoopback(h)).toBe(true);
    for (const h of ['0.0.0.0', '::', '10.0.0.5', '192.168.1.2', 'example.org'])
      expect(isLoopback(h)).toBe(false);
    expect(tokenMatches(TOKEN, TOKEN)).toBe(true);
    expect(tokenMatches(`${TOKEN}x`, TOKEN)).toBe(false);
    expect(tokenMatches('', TOKEN)).toBe(false);
  });

  it('groups dead-letter reasons without their particulars', () => {
    expect(reasonClass('extract: passage 3: mcq: reply invalid after 2 tries', 'extract')).toBe(
      'passage N: mcq: reply invalid after N tries',
    );
    expect(reasonClass('malformed XML in /data/in/a.xml at line 12', 'sources/jats')).toBe(
      'malformed XML in … at line N',
    );
    // Ids of hex digits count as one reason, not one row each.
    expect(reasonClass('grade: duplicate candidate aeb1c2f0d9 of 3e5f77a1b2c4', 'grade')).toBe(
      'duplicate candidate <id> of <id>',
    );
  });

  it('on a non-loopback address answers 401 to the page, the API, the stream and /metrics without the token', async () => {
    const { child, port } = await dashboard(['--host', '0.0.0.0'], { BIOALCHEMY_DASHBOARD_TOKEN: TOKEN });
    children.push(child);
    const base = `http://${outsideAddress()}:${port}`;
    const paths = ['/', '/assets/app.js', '/api/snapshot', '/api/panels/topics', '/api/events', '/metrics'];
    for (const path of paths) {
      const bare = await fetch(`${base}${path}`);
      expect(bare.status, path).toBe(401);
      expect(bare.headers.get('www-authenticate')).toMatch(/^Bearer/);
      const wrong = await fetch(`${base}${path}`, { headers: { authorization: 'Bearer not-the-token' } });
      expect(wrong.status, path).toBe(401);
      const stop = new AbortController();
      const right = await fetch(`${base}${path}`, {
        headers: { authorization: `Bearer ${TOKEN}` },
        signal: stop.signal,
      });
      expect(right.status, path).toBe(200);
      stop.abort();
    }
    // A link with ?token= sets a cookie the page's fetch and EventSource carry, and drops the token from the address.
    const link = await fetch(`${base}/?token=${TOKEN}`, { redirect: 'manual' });
    expect(link.status).toBe(303);
    expect(link.headers.get('location')).toBe('/');
    const cookie = link.headers.get('set-cookie')!;
    expect(cookie).toMatch(/HttpOnly; SameSite=Strict/);
    const withCookie = await fetch(`${base}/api/snapshot`, { headers: { cookie: cookie.split(';')[0]! } });
    expect(withCookie.status).toBe(200);
    expect(((await withCookie.json()) as { totals: { qa: number } }).totals.qa).toBe(0);
    expect((await fetch(`${base}/?token=wrong`, { redirect: 'manual' })).status).toBe(401);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  }, 60_000);

  it('refuses to listen off loopback without a token, and needs none on loopback', async () => {
    const refused = await cliAsync([
      'dashboard',
      '--config',
      workspace(NO_LLM).config,
      '--host',
      '0.0.0.0',
      '--port',
      '0',
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split('\n').at(-1)).toMatch(
      /needs a bearer token: set BIOALCHEMY_DASHBOARD_TOKEN/,
    );
    const { child, port } = await dashboard([], {});
    children.push(child);
    expect((await fetch(`http://127.0.0.1:${port}/api/panels/topics`)).status).toBe(200);
    const page = await fetch(`http://127.0.0.1:${port}/`);
    expect(await page.text()).toContain('/assets/echarts.min.js');
    const echarts = await fetch(`http://127.0.0.1:${port}/assets/echarts.min.js`);
    expect((await echarts.text()).length).toBeGreaterThan(500_000);
  }, 60_000);
});
