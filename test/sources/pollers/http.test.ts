import { afterEach, describe, expect, it } from 'vitest';
import { HttpError, PoliteHttp, retryAfterMs } from '../../../sources/pollers/http.js';
import { HostRateLimiter } from '../../../sources/pollers/rate-limit.js';
import { type FakeApi, memoryLog, type Reply, startFakeApi } from './fake-api.js';

let api: FakeApi | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

/** Replies in turn; the last one repeats. */
function scripted(...replies: Reply[]) {
  let i = 0;
  return () => replies[Math.min(i++, replies.length - 1)]!;
}

const quick = { backoffMs: 5, maxBackoffMs: 20, retries: 3, timeoutMs: 2_000 };
const client = (settings = {}, log = memoryLog()) =>
  new PoliteHttp({ ...quick, ...settings }, { limiter: new HostRateLimiter(), log });

describe('PoliteHttp', () => {
  it('retries 5xx with backoff and returns the body that finally comes', async () => {
    api = await startFakeApi(scripted({ status: 500 }, { status: 503 }, { body: 'ok' }));
    const log = memoryLog();
    const res = await client({}, log).get(new URL(`${api.url}/x`), { minIntervalMs: 0 });
    expect(res.body.toString()).toBe('ok');
    expect(api.seen).toHaveLength(3);
    expect(log.lines.filter((l) => l.includes('retrying'))).toHaveLength(2);
  });

  it('waits out Retry-After on 429 before asking again', async () => {
    api = await startFakeApi(scripted({ status: 429, headers: { 'retry-after': '1' } }, { body: 'ok' }));
    const res = await client().get(new URL(`${api.url}/x`), { minIntervalMs: 0 });
    expect(res.body.toString()).toBe('ok');
    expect(api.seen).toHaveLength(2);
    expect(api.seen[1]!.at - api.seen[0]!.at).toBeGreaterThanOrEqual(950);
  });

  it('throws at once when Retry-After is longer than it waits, saying how long', async () => {
    api = await startFakeApi(scripted({ status: 503, headers: { 'retry-after': '3600' } }));
    const err = await client()
      .get(new URL(`${api.url}/x`), { minIntervalMs: 0 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HttpError);
    expect((err as HttpError).retryAfterMs).toBe(3_600_000);
    expect(api.seen).toHaveLength(1);
  });

  it('does not retry a 4xx other than 408/429', async () => {
    api = await startFakeApi(scripted({ status: 404 }));
    const err = await client()
      .get(new URL(`${api.url}/x`), { minIntervalMs: 0 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HttpError);
    expect((err as HttpError).status).toBe(404);
    expect(api.seen).toHaveLength(1);
  });

  it('throws HttpError once retries are spent', async () => {
    api = await startFakeApi(scripted({ status: 502 }));
    const err = await client({ retries: 2 })
      .get(new URL(`${api.url}/x`), { minIntervalMs: 0 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HttpError);
    expect((err as HttpError).attempts).toBe(3);
    expect((err as Error).message).toMatch(/HTTP 502 after 3 attempts/);
    expect(api.seen).toHaveLength(3);
  });

  it('times out a slow attempt and retries it', async () => {
    api = await startFakeApi(scripted({ body: 'late', delayMs: 1_000 }, { body: 'ok' }));
    const res = await client({ timeoutMs: 150 }).get(new URL(`${api.url}/x`), { minIntervalMs: 0 });
    expect(res.body.toString()).toBe('ok');
    expect(api.seen).toHaveLength(2);
  });

  it("stops on the caller's abort signal, without retrying", async () => {
    api = await startFakeApi(scripted({ status: 500 }));
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 100);
    const started = performance.now();
    const err = await client({ backoffMs: 5_000, maxBackoffMs: 5_000 })
      .get(new URL(`${api.url}/x`), { minIntervalMs: 0, signal: ctl.signal })
      .catch((e: unknown) => e);
    expect((err as Error).name).toBe('AbortError');
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('spaces requests to one host by the minimum interval, even when issued together', async () => {
    api = await startFakeApi(() => ({ body: 'ok' }));
    const http = client();
    const url = new URL(`${api.url}/x`);
    await Promise.all([0, 1, 2, 3].map(() => http.get(url, { minIntervalMs: 150 })));
    const gaps = api.seen.slice(1).map((s, i) => s.at - api!.seen[i]!.at);
    expect(gaps).toHaveLength(3);
    // Timers may fire a millisecond early and the server clock is not the client's: a small tolerance.
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(140);
  });

  it('sends a descriptive User-Agent', async () => {
    api = await startFakeApi(() => ({ body: 'ok' }));
    await client({ contact: 'ops@example.org' }).get(new URL(`${api.url}/x`), { minIntervalMs: 0 });
    expect(api.seen[0]!.headers['user-agent']).toMatch(
      /^bioalchemy-stream\/\S+ \(.*mailto:ops@example\.org\)$/,
    );
  });

  it('sends secret parameters but never shows them in the URL it returns, its errors or its logs', async () => {
    const secret = 'k3y-SECRET-0123456789';
    api = await startFakeApi(
      scripted({ status: 500, body: `{"error":"boom","api-key":"${secret}"}` }, { body: 'ok' }),
    );
    const log = memoryLog();
    const res = await client({}, log).get(new URL(`${api.url}/x?db=pubmed`), {
      minIntervalMs: 0,
      secretParams: { api_key: secret },
    });
    expect(api.seen.every((s) => s.query.get('api_key') === secret)).toBe(true);
    expect(res.url).not.toContain(secret);
    expect(log.lines.join('\n')).not.toContain(secret);

    const failing = await startFakeApi(() => ({ status: 400, body: `bad key ${secret}` }));
    const err = (await client({}, log)
      .get(new URL(`${failing.url}/x`), { minIntervalMs: 0, secretParams: { api_key: secret } })
      .catch((e: unknown) => e)) as Error;
    await failing.close();
    expect(`${err.message}\n${err.stack}\n${JSON.stringify(err)}`).not.toContain(secret);

    // A network failure: nothing listens on the port any more.
    const down = (await client({ retries: 1 }, log)
      .get(new URL(`${failing.url}/x`), { minIntervalMs: 0, secretParams: { api_key: secret } })
      .catch((e: unknown) => e)) as Error;
    expect(down).toBeInstanceOf(HttpError);
    expect(`${down.message}\n${down.stack}`).not.toContain(secret);
    expect(log.lines.join('\n')).not.toContain(secret);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    expect(retryAfterMs('2')).toBe(2000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4_000)).toBe(6000);
    expect(retryAfterMs('soon')).toBeNull();
    expect(retryAfterMs(null)).toBeNull();
  });
});
