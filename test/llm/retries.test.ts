import { afterEach, describe, expect, it } from 'vitest';
import { LlmReplyError, LlmRequestError } from '../../llm/index.js';
import { FastClock, ManualClock, Mcq, mcq, type Rig, rig, until } from './helpers.js';

let r: Rig | undefined;
afterEach(async () => {
  await r?.close();
  r = undefined;
});

describe('retries', () => {
  it("honours a 429's Retry-After", async () => {
    const clock = new FastClock();
    r = await rig({}, { clock }, { faults: { sequence: ['rate-limit'], retryAfterSeconds: 7 } });
    const reply = await r.llm.complete(mcq(1));

    expect(Mcq.parse(reply.value)).toEqual(reply.value);
    expect(clock.sleeps).toHaveLength(1);
    expect(clock.sleeps[0]).toBeGreaterThanOrEqual(7000);
    expect(r.records[0]!.attempts).toBe(2);
    expect(await r.metric('bioalchemy_llm_retries_total', { reason: 'rate-limit' })).toBe(1);
  });

  it('retries 500s, connection resets and timeouts, with growing backoff', async () => {
    const clock = new FastClock();
    r = await rig(
      { timeoutMs: 300, retry: { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 10_000 } },
      { clock },
      { faults: { sequence: ['server-error', 'reset', 'timeout'] } },
    );
    const reply = await r.llm.complete(mcq(1));

    expect(Mcq.parse(reply.value)).toEqual(reply.value);
    expect(r.server.stats().requests).toBe(4);
    expect(r.records).toHaveLength(1);
    expect(r.records[0]!.attempts).toBe(4);
    for (const reason of ['server-error', 'connection', 'timeout']) {
      expect(await r.metric('bioalchemy_llm_retries_total', { reason })).toBe(1);
    }
    // Equal jitter: retry n waits between half and all of base * 2^(n-1).
    expect(clock.sleeps.map((ms, n) => ms >= 50 * 2 ** n && ms <= 100 * 2 ** n)).toEqual([true, true, true]);
  });

  it('gives up with LlmRequestError after maxAttempts while the endpoint answers', async () => {
    r = await rig(
      { retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 1 } },
      { clock: new FastClock() },
      { faults: { sequence: ['server-error', 'server-error', 'server-error'] } },
    );
    const error = await r.llm.complete(mcq(1)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmRequestError);
    expect((error as Error).message).toMatch(/server-error/);
    expect(r.server.stats().requests).toBe(3);
    expect(await r.metric('bioalchemy_llm_calls_total', { outcome: 'failed' })).toBe(1);
  });

  it('does not retry a request the endpoint refuses', async () => {
    r = await rig({}, {}, { faults: { sequence: ['bad-request'] } });
    const error = await r.llm.complete(mcq(1)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmRequestError);
    expect((error as LlmRequestError).status).toBe(400);
    expect(r.server.stats().requests).toBe(1);
  });
});

describe('circuit', () => {
  it('pauses calls while the endpoint is down, probes, and resumes without dropping any', async () => {
    const failures = 20;
    const calls = 10;
    r = await rig(
      {
        retry: { maxAttempts: 5, baseDelayMs: 10, maxDelayMs: 100 },
        circuit: { failureThreshold: 3, probeIntervalMs: 5_000 },
      },
      { clock: new FastClock() },
      { faults: { sequence: Array(failures).fill('server-error') } },
    );
    const replies = await Promise.all(Array.from({ length: calls }, (_, i) => r!.llm.complete(mcq(i))));

    expect(replies.every((x) => Mcq.safeParse(x.value).success)).toBe(true);
    const stats = r.server.stats();
    expect(stats.requests).toBe(failures + calls);
    expect(stats.answered).toBe(calls);
    const down = r.logs.filter((l) => /endpoint down/.test(l.msg));
    const up = r.logs.filter((l) => /answering again/.test(l.msg));
    expect([down.length, up.length]).toEqual([1, 1]);
    expect(await r.metric('bioalchemy_llm_endpoint_down')).toBe(0);
  });

  it('holds calls unsent and the gauge at 1 until a probe succeeds', async () => {
    const clock = new ManualClock();
    r = await rig(
      {
        retry: { maxAttempts: 5, baseDelayMs: 10, maxDelayMs: 10 },
        circuit: { failureThreshold: 2, probeIntervalMs: 60_000 },
      },
      { clock },
      { faults: { sequence: ['server-error', 'server-error'] } },
    );
    const first = r.llm.complete(mcq(1));
    await until(() => r!.server.stats().requests === 1 && clock.pending === 1);
    await clock.advance(10); // the backoff after the first failure
    await until(async () => (await r!.metric('bioalchemy_llm_endpoint_down')) === 1);
    const second = r.llm.complete(mcq(2));
    await until(() => clock.pending === 1); // the probe timer, with both calls behind it
    expect(r.server.stats().requests).toBe(2);

    await clock.advance(60_000);
    const replies = await Promise.all([first, second]);
    expect(replies.map((x) => x.cached)).toEqual([false, false]);
    expect(r.server.stats()).toMatchObject({ requests: 4, answered: 2 });
    expect(await r.metric('bioalchemy_llm_endpoint_down')).toBe(0);
  });
});

describe('under mixed faults', () => {
  it('completes every call or fails it with a typed error, and pays each request once', async () => {
    const n = 200;
    r = await rig(
      { timeoutMs: 1000, concurrency: 32 },
      { clock: new FastClock() },
      {
        seed: 7,
        faults: {
          rate: 0.2,
          kinds: ['rate-limit', 'server-error', 'timeout', 'reset', 'truncated', 'schema-break'],
        },
      },
    );
    const outcomes = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        r!.llm.complete(mcq(i)).then(
          (x) => (Mcq.safeParse(x.value).success ? 'ok' : 'invalid value'),
          (e: unknown) =>
            e instanceof LlmReplyError || e instanceof LlmRequestError ? e.name : `untyped: ${e}`,
        ),
      ),
    );

    expect(outcomes.filter((o) => !['ok', 'LlmReplyError', 'LlmRequestError'].includes(o))).toEqual([]);
    expect(outcomes.filter((o) => o === 'ok').length).toBeGreaterThan(n * 0.9);
    const paid = r.records.filter((x) => !x.cached);
    const repairs = paid.filter((x) => x.repair).length;
    const retries = await r.metric('bioalchemy_llm_retries_total');
    const gaveUp = outcomes.filter((o) => o === 'LlmRequestError').length;
    // No request was paid for twice: a reply, once received, was journaled and never asked for again.
    expect(new Set(paid.map((x) => x.requestKey)).size).toBe(paid.length);
    // Every attempt the layer made reached the server, and nothing else did: a reply, a retry, or
    // a last failure. (A reply the server sent after the client's timeout is paid yet unseen: it
    // is in answered, not in paid, and shows as a timeout retry.)
    await until(() => r!.server.stats().requests === paid.length + retries + gaveUp);
    const stats = r.server.stats();
    expect(stats.answered).toBeGreaterThanOrEqual(paid.length);
    expect(stats.answered).toBeLessThanOrEqual(n + repairs + retries);
  });
});
