import { describe, expect, it } from 'vitest';
import { oneArticle } from './slow-server.js';

/**
 * A new user's first run against a server with one decoding slot, with the minimal config (issue
 * 49): it finishes, nothing times out, nothing is decoded for a client that left, and it takes
 * about what it takes fed one request at a time (the same server stating its one slot at
 * GET /props, so the limit starts and stays at 1). Replies take 1 s against a 6 s timeout: the
 * ratio of 20 s a reply to the default 120 s (`npm run bench -- slow-server` runs it at 20 s).
 */
describe('one sample article against a server with one decoding slot', () => {
  it('finishes with no request timed out, in at most 1.25x the time fed one at a time', async () => {
    const found = await oneArticle({ slots: 1, replyMs: 1000, timeoutMs: 6000 });
    const fed = await oneArticle({ slots: 1, replyMs: 1000, timeoutMs: 6000, statesSlots: true });
    expect(found.requests).toEqual({ answered: found.stats.answered });
    expect(found.stats.decodedForNobody).toBe(0);
    expect(found.stats.maxWaiting).toBeLessThanOrEqual(2);
    expect(found.concurrency).toMatch(/limit [12] of 64/);
    expect(fed.concurrency).toMatch(/limit 1 of 1 \(the server states 1 slots\)/);
    expect(found.seconds / fed.seconds).toBeLessThanOrEqual(1.25);
  }, 300_000);
});
