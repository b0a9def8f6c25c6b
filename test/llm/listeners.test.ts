import { getEventListeners } from 'node:events';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Endpoint } from '../../llm/flow/endpoint.js';
import { Throttle } from '../../llm/flow/throttle.js';
import type { ResponseJournal } from '../../llm/journal/journal.js';
import { type LlmServer, start } from '../llm-server/server.js';
import { FastClock, mcq, type Rig, rig, until } from './helpers.js';

/**
 * "Nothing on the event loop grows with history", for the signal every call listens to: the openai
 * client adds a listener per request to the signal it is handed and keeps it, so a long-lived stop
 * signal handed to it holds one per call ever made, and each add walks the list (issue 48).
 */

/** Forces a full collection: the heap a test compares is what is still reachable. */
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapUsed = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

const abortListeners = (signal: AbortSignal) => getEventListeners(signal, 'abort').length;

/** Keeps no reply: the heap measured is the layer's own, not the replies a journal is meant to hold. */
const keepsNothing: ResponseJournal = { get: () => undefined, put: () => {} };

const WAVE = 32;
const PROMPTS = 256;

describe('the stop signal holds the calls in flight, never the calls made', () => {
  let server: LlmServer;
  let r: Rig;
  let asked = 0;
  /** `waves` waves of WAVE distinct calls at once; after each, what the stop signal holds. */
  const waves = async (n: number) => {
    const held: number[] = [];
    for (let w = 0; w < n; w++) {
      // Prompts come round again (nothing is journaled, so each is sent again): the server in this
      // process counts requests by prompt, and its counts must not grow with the calls either.
      const inFlight = Array.from({ length: WAVE }, () => r.llm.complete(mcq(asked++ % PROMPTS)));
      // Every call of the wave has started: each may hold one listener, no more.
      expect(abortListeners(r.llm.stopSignal)).toBeLessThanOrEqual(WAVE);
      await Promise.all(inFlight);
      held.push(abortListeners(r.llm.stopSignal));
    }
    return held;
  };

  beforeAll(async () => {
    server = await start();
    // No record kept of each call (the rig keeps them by default): the heap is the layer's.
    r = await rig({ concurrency: 16 }, { journal: keepsNothing, onCall: () => {} }, server);
  });
  afterAll(async () => {
    await r.close();
    await server.stop();
  });

  it('after every wave of calls through the openai client, none is left on it', async () => {
    expect(await waves(20)).toEqual(Array(20).fill(0));
  });

  it('the heap does not grow with the calls made', async () => {
    // Warm: code compiled, connections open, metrics' label sets made, every prompt seen.
    await waves(60);
    const before = heapUsed();
    await waves(125); // 4,000 calls
    const grown = heapUsed() - before;
    // A listener kept per call (a closure holding the client's own controller) is over 500 bytes:
    // 4,000 of them are 2 MB and more. What stays is noise of the collector's and the server's.
    expect(grown).toBeLessThan(1_000_000);
  });

  it('stopping still aborts every call in flight', async () => {
    const slow = await start({ latency: { kind: 'fixed', ms: 60_000 } });
    const s = await rig({ concurrency: 8 }, { journal: keepsNothing }, slow);
    const calls = Array.from({ length: 8 }, (_, i) =>
      s.llm.complete(mcq(`slow ${i}`)).then(
        () => 'answered',
        (e: Error) => e.name,
      ),
    );
    // Every call waits or is sent (the adaptive limit sends one at first): each holds one listener.
    await until(() => slow.stats().inFlight > 0);
    expect(abortListeners(s.llm.stopSignal)).toBe(8);
    s.llm.stop();
    expect(await Promise.all(calls)).toEqual(Array(8).fill('LlmStoppedError'));
    expect(abortListeners(s.llm.stopSignal)).toBe(0);
    await s.close();
    await slow.stop();
  });
});

describe('a fault verdict race leaves nothing on the signal it was given', () => {
  it('each call failing with a suspect 400, which waits for a verdict or a probe interval', async () => {
    const clock = new FastClock();
    const endpoint = new Endpoint(
      'http://h/v1',
      {
        limits: { concurrency: 4 },
        retry: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 100 },
        circuit: { failureThreshold: 8, probeIntervalMs: 1000 },
      },
      clock,
      { onRetry: () => {}, onDown: () => {} },
    );
    const stop = new AbortController();
    const who = { stage: 'mcq', model: 'm', stageModel: false };
    // Inputs told apart in words: a fault's signature reads digits as one (faults.ts), and the
    // same signature from three inputs is the endpoint's fault, not a race.
    const word = (i: number) =>
      [...i.toString(26)].map((d) => String.fromCharCode(97 + parseInt(d, 26))).join('');
    const refused = (i: number) => Object.assign(new Error(`400 input ${word(i)} refused`), { status: 400 });
    for (let i = 0; i < 200; i++) {
      // A distinct input each time (no repeats, so no endpoint fault): each race ends "record".
      await expect(
        endpoint.send(
          new Throttle({}, clock),
          1,
          async () => {
            throw refused(i);
          },
          { ...who, key: `input-${i}` },
          stop.signal,
        ),
      ).rejects.toThrow(`input ${word(i)} refused`);
    }
    expect(abortListeners(stop.signal)).toBe(0);
  });
});
