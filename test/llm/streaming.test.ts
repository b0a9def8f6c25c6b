import { afterEach, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { EndpointProgress, ProgressWatch } from '../../llm/providers/progress.js';
import { DIALECTS, type Dialect } from '../llm-server/dialects.js';
import { type ChatRequest, schemaResponder } from '../llm-server/server.js';
import { mcq, type Rig, rig } from './helpers.js';

/**
 * Timeouts that measure progress (issue 49): replies are streamed, a reply that is arriving is
 * never cut off, one that does not start or stops is, and the whole-reply timeout is only the
 * bound above them. The test server streams as OpenAI documents (test/llm-server/server.ts).
 */

let rigs: Rig[] = [];
afterEach(async () => {
  for (const r of rigs) await r.close();
  rigs = [];
});

const open = async (...args: Parameters<typeof rig>) => {
  const r = await rig(...args);
  rigs.push(r);
  return r;
};

describe('streamed replies', () => {
  it('a reply decoded for longer than the first-chunk and stall timeouts together is not timed out: it is arriving', async () => {
    // Four events or more over 4 s: one at least every second.
    const config = { firstTokenTimeoutMs: 1500, stallTimeoutMs: 1500, timeoutMs: 20_000 };
    const r = await open(config, {}, { latency: { kind: 'fixed', ms: 4_000 } });
    await r.llm.complete(mcq(1));
    expect(Object.fromEntries(r.llm.requests)).toEqual({ answered: 1 });
    expect(r.server.stats()).toMatchObject({ requests: 1, answered: 1, decodedForNobody: 0 });

    // The same reply asked for whole: only the whole-reply timeout measures it, and it runs out.
    const whole = await open(
      { ...config, stream: false, timeoutMs: 1500, retry: { maxAttempts: 2, baseDelayMs: 10 } },
      {},
      { latency: { kind: 'fixed', ms: 4_000 } },
    );
    await expect(whole.llm.complete(mcq(1))).rejects.toThrow(/timeout/);
    expect(whole.llm.requests.get('timeout')).toBe(2);
  }, 20_000);

  it('a reply that stops half-way is given up after the stall timeout and asked again', async () => {
    const r = await open(
      { stallTimeoutMs: 300, timeoutMs: 60_000 },
      {},
      { latency: { kind: 'fixed', ms: 200 }, faults: { sequence: ['stall'] } },
    );
    await r.llm.complete(mcq(1));
    expect(Object.fromEntries(r.llm.requests)).toEqual({ timeout: 1, answered: 1 });
    expect(r.server.stats()).toMatchObject({ requests: 2, answered: 1, decodedForNobody: 0 });
  });

  it('a request never answered is given up after the first-chunk timeout, not the whole-reply one', async () => {
    const r = await open(
      { firstTokenTimeoutMs: 300, timeoutMs: 600_000 },
      {},
      { faults: { sequence: ['timeout'] } },
    );
    // Were the whole-reply timeout the one that ended it, this would outlast the test's 10 s.
    await r.llm.complete(mcq(1));
    expect(Object.fromEntries(r.llm.requests)).toEqual({ timeout: 1, answered: 1 });
  });

  it("a request queued behind replies being decoded is not timed out while they bring chunks: the server's queue is not a stall", async () => {
    // One slot, 1.5 s a reply, a first-chunk timeout of 0.6 s: the requests after the first wait
    // in the server's queue longer than that, with no chunk of their own.
    const r = await open(
      { firstTokenTimeoutMs: 600, stallTimeoutMs: 1_000, timeoutMs: 30_000 },
      {},
      { slots: 1, latency: { kind: 'fixed', ms: 1_500 } },
    );
    await Promise.all([1, 2, 3, 4].map((i) => r.llm.complete(mcq(i))));
    expect(Object.fromEntries(r.llm.requests)).toEqual({ answered: 4 });
    expect(r.server.stats().maxWaiting).toBeGreaterThanOrEqual(1);
  }, 30_000);

  it('the first-chunk timeout runs out once the endpoint as a whole brings nothing', async () => {
    const endpoint = new EndpointProgress();
    const limits = { firstChunkMs: 100, stallMs: 1_000, totalMs: 60_000 };
    const watch = new ProgressWatch(limits, endpoint);
    // Another stream of the endpoint brings a chunk every 20 ms for 300 ms: three times the timeout.
    const other = new ProgressWatch(limits, endpoint);
    for (const deadline = Date.now() + 300; Date.now() < deadline; ) {
      other.progressed();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(watch.expired).toBeUndefined();
    other.done();
    await new Promise<void>((resolve) => watch.signal.addEventListener('abort', () => resolve()));
    expect(watch.expired?.message).toMatch(/no first chunk within 0\.1 s, nor any from the endpoint/);
    watch.done();
  });

  it('every dialect gives the same reply, tokens and reasoning streamed as whole', async () => {
    for (const name of Object.keys(DIALECTS) as (keyof typeof DIALECTS)[]) {
      const replies = [];
      for (const stream of [true, false]) {
        const sent: ChatRequest[] = [];
        const r = await open(
          { stream },
          {},
          {
            dialect: DIALECTS[name],
            responder: (request, context) => {
              sent.push(request);
              return schemaResponder(request, context);
            },
          },
        );
        const done = await r.llm.complete(mcq(7)).then(
          (c) => ({ value: c.value, usage: c.usage }),
          (e: Error) => ({ error: e.name }),
        );
        replies.push({
          done,
          calls: r.records.map((c) => [c.inputTokens, c.outputTokens, c.reasoningTokens ?? 0, c.repair]),
        });
        expect(sent.every((q) => (q as { stream?: boolean }).stream === (stream || undefined))).toBe(true);
      }
      // Events carry the usage only where stream_options asks: a whole request answered with
      // events (framing 'events') has none, as a server that does not send it.
      const dialect = DIALECTS[name] as z.input<typeof Dialect>;
      if (!dialect.streamsNoUsage && dialect.framing !== 'events') {
        expect({ name, ...replies[0] }).toEqual({ name, ...replies[1] });
        continue;
      }
      // No usage in some of its streams: the same reply, its tokens estimated (a token per piece streamed).
      const [streamed, whole] = replies as [(typeof replies)[0], (typeof replies)[0]];
      expect((streamed.done as { value: unknown }).value).toEqual((whole.done as { value: unknown }).value);
      for (const [input, output] of streamed.calls as number[][]) {
        expect(input).toBeGreaterThan(0);
        expect(output).toBeGreaterThan(0);
      }
    }
  });

  it('a server that refuses stream_options is streamed to without it, the usage estimated', async () => {
    const r = await open(
      {},
      {},
      {
        responder: (request, context) => {
          if ((request as { stream_options?: unknown }).stream_options)
            throw new Error('Unrecognized request argument supplied: stream_options');
          return schemaResponder(request, context);
        },
      },
    );
    const done = await r.llm.complete(mcq(3));
    expect(done.usage.outputTokens).toBeGreaterThan(0);
    expect(done.usage.inputTokens).toBeGreaterThan(0);
    expect(r.logs.some((l) => /stream_options refused/.test(JSON.stringify(l)))).toBe(true);
  });
});
