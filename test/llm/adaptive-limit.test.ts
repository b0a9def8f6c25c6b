import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AdaptiveLimit, type Permit } from '../../llm/flow/adaptive-limit.js';
import { drawLatency } from '../llm-server/latency.js';
import { seededFrom } from '../llm-server/random.js';

/**
 * The adaptive limit against a simulated server in virtual time: `slots` decoding slots, a FIFO
 * queue, each request's first chunk `promptMs` after it takes a slot and its end `replyMs` after.
 * The client always has a request to send (a pipeline's backlog). Events run in time order; after
 * each, the promises the limit resolved run before the next (so a permit handed out is sent "now").
 */
async function simulate(opts: {
  slots: number;
  replyMs: number | (() => number);
  promptMs: number;
  requests: number;
  streamed: boolean;
}) {
  const limit = new AdaptiveLimit(64);
  let now = 0;
  const events: { at: number; run: () => void }[] = [];
  const at = (time: number, run: () => void) => events.push({ at: time, run });
  const queue: (() => void)[] = [];
  let busy = 0;
  /** The most requests waiting for a slot before the first reply ended: slow start's overshoot. */
  let maxWaiting = 0;
  let sent = 0;
  /** The limit when the first reply ended, and the requests in a slot or queued then. */
  let atFirstReply: { limit: number; sent: number } | undefined;
  const decode = (sentAt: number, permit: Permit) => {
    busy++;
    if (opts.streamed) at(now + opts.promptMs, () => permit.started(now - sentAt));
    at(now + (typeof opts.replyMs === 'number' ? opts.replyMs : opts.replyMs()), () => {
      atFirstReply ??= { limit: limit.current, sent };
      permit.answered(now - sentAt);
      busy--;
      queue.shift()?.();
    });
  };
  const send = async () => {
    while (sent < opts.requests) {
      const permit = await limit.acquire();
      sent++;
      const sentAt = now;
      if (busy < opts.slots) decode(sentAt, permit);
      else {
        queue.push(() => decode(sentAt, permit));
        if (!atFirstReply) maxWaiting = Math.max(maxWaiting, queue.length);
      }
    }
  };
  // As many senders as the bound: the limit, not the client, decides what is in flight.
  const senders = Array.from({ length: 64 }, () => send());
  const flush = () => new Promise((resolve) => setImmediate(resolve));
  await flush();
  while (events.length > 0) {
    events.sort((a, b) => a.at - b.at);
    const next = events.shift()!;
    now = next.at;
    next.run();
    await flush();
  }
  await Promise.all(senders);
  return {
    limit: limit.current,
    maxWaiting,
    atFirstReply: atFirstReply!,
    queueingSeen: limit.queueingSeen,
  };
}

describe('slow start grows by first chunks, not whole replies', () => {
  it('streamed: every slot of four is busy before the first reply ends, one request waiting meanwhile', async () => {
    const r = await simulate({ slots: 4, replyMs: 20_000, promptMs: 1_000, requests: 40, streamed: true });
    // 1 -> 5 by four first chunks: the fifth request waits for a slot and sends none.
    expect(r.atFirstReply).toEqual({ limit: 5, sent: 5 });
    expect(r.maxWaiting).toBe(1);
    expect(r.limit).toBeGreaterThanOrEqual(4);
  });

  it('whole replies: the same server is ramped a round trip at a time', async () => {
    const r = await simulate({ slots: 4, replyMs: 20_000, promptMs: 1_000, requests: 40, streamed: false });
    expect(r.atFirstReply).toEqual({ limit: 1, sent: 1 });
  });

  it('a first chunk that waited for a freed slot ends slow start: one slot is never sent more than two', async () => {
    const r = await simulate({ slots: 1, replyMs: 20_000, promptMs: 1_000, requests: 12, streamed: true });
    expect(r.atFirstReply).toEqual({ limit: 2, sent: 2 });
    expect(r.maxWaiting).toBe(1);
    expect(r.limit).toBeLessThanOrEqual(2);
  });

  it('for any number of slots, streamed replies fill them before the first reply ends, one request waiting meanwhile', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 48 }),
        fc.integer({ min: 1, max: 200 }),
        async (slots, promptMs) => {
          // Each first chunk sends one request more: the ramp takes a prompt's reading a slot.
          const replyMs = (slots + 2) * promptMs + 1_000;
          const r = await simulate({ slots, replyMs, promptMs, requests: 3 * slots + 4, streamed: true });
          expect(r.atFirstReply.sent).toBe(slots + 1);
          expect(r.maxWaiting).toBeLessThanOrEqual(1);
          expect(r.limit).toBeGreaterThanOrEqual(slots);
        },
      ),
      { numRuns: 25 },
    );
  });

  it('replies whose lengths vary (log-normal, p99 ten times the median) with no queue: never lowered, and grown to the bound (streamed) or near it', async () => {
    // Before slow start kept its single replies apart, the least of them (a short reply) became the
    // rounds' baseline: every round's median read as a queue of most of the limit, and it was
    // lowered again and again (npm run bench -- llm: 0.58 of the ideal rate).
    for (const streamed of [true, false]) {
      const random = seededFrom(`lognormal ${streamed}`);
      const r = await simulate({
        slots: Number.POSITIVE_INFINITY,
        replyMs: () => drawLatency({ kind: 'lognormal', medianMs: 200, p99Ms: 2_000 }, random),
        promptMs: 10,
        requests: 3_000,
        streamed,
      });
      expect(r.queueingSeen).toBe(0);
      // Streamed, slow start never ends (no first chunk waits); whole replies grow a round at a time.
      expect(r.limit).toBeGreaterThanOrEqual(streamed ? 64 : 48);
    }
  });
});
