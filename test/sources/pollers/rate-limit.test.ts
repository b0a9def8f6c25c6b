import { describe, expect, it } from 'vitest';
import { HostRateLimiter } from '../../../sources/pollers/rate-limit.js';

describe('HostRateLimiter', () => {
  it('starts each request an interval after the previous answer, one at a time per host', async () => {
    const limiter = new HostRateLimiter();
    const starts: number[] = [];
    const answers: number[] = [];
    await Promise.all(
      [0, 1, 2].map(async () => {
        const release = await limiter.acquire('a.example', 50);
        starts.push(performance.now());
        await new Promise((r) => setTimeout(r, 30)); // the request in flight
        answers.push(performance.now());
        release();
      }),
    );
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - answers[i - 1]!).toBeGreaterThanOrEqual(48);
  });

  it('does not hold one host up for another', async () => {
    const limiter = new HostRateLimiter();
    const held = await limiter.acquire('a.example', 10_000);
    const t = performance.now();
    (await limiter.acquire('b.example', 10_000))();
    expect(performance.now() - t).toBeLessThan(100);
    held();
  });

  it('passes the turn on when a queued caller gives up', async () => {
    const limiter = new HostRateLimiter();
    const held = await limiter.acquire('a.example', 0);
    const ctl = new AbortController();
    const quitter = limiter.acquire('a.example', 0, ctl.signal);
    const next = limiter.acquire('a.example', 0);
    ctl.abort();
    await expect(quitter).rejects.toThrow();
    held();
    const release = await next;
    release();
  });

  it('holds every caller of a host back until a Retry-After pause is over', async () => {
    const limiter = new HostRateLimiter();
    const t = performance.now();
    limiter.pauseUntil('a.example', Date.now() + 200);
    (await limiter.acquire('a.example', 0))();
    expect(performance.now() - t).toBeGreaterThanOrEqual(190);
  });
});
