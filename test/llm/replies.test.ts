import { afterEach, describe, expect, it } from 'vitest';
import { type EndpointFault, EndpointMemory, LlmStoppedError, MemoryJournal } from '../../llm/index.js';
import type { LlmJournalReply } from '../../schemas/llm.js';
import { DIALECTS } from '../llm-server/dialects.js';
import type { ServerOptions } from '../llm-server/server.js';
import { Mcq, mcq, type Rig, rig, until } from './helpers.js';

/**
 * Replies as real servers send them (issue 60): a reply is complete when the server says so (a
 * finish_reason), and its body is read by what the server sent, whatever was asked. Each server
 * behaviour is a test-server dialect citing the server it follows (test/llm-server/dialects.ts).
 */

/** A journal that keeps every reply put in it, in order: what would be paid for again never. */
class WatchedJournal extends MemoryJournal {
  readonly puts: LlmJournalReply[] = [];

  override put(key: string, reply: LlmJournalReply): void {
    this.puts.push(reply);
    super.put(key, reply);
  }
}

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

/** llama-cpp-python as it runs by default: one request at a time, a request arriving ends the stream in progress. */
const INTERRUPTING: ServerOptions = {
  dialect: DIALECTS.interrupt,
  slots: 1,
  latency: { kind: 'fixed', ms: 150 },
};

const ONE_AT_A_TIME_LOG = /ends the reply it is streaming whenever another request arrives/;

describe('a stream that ends without a finish_reason is cut, not a reply', () => {
  it("llama-cpp-python's interrupt_requests: every call completes, no cut reply is journaled, the cuts are counted, and the endpoint is learned one at a time, once", async () => {
    const journal = new WatchedJournal();
    const memory = EndpointMemory.inMemory();
    const r = await open({}, { journal, memory }, INTERRUPTING);

    const done = await Promise.all([1, 2, 3, 4, 5, 6].map((i) => r.llm.complete(mcq(i))));

    for (const d of done) expect(Mcq.safeParse(d.value).success).toBe(true);
    const cut = r.server.stats().cut;
    // Learned after two cuts; of the requests then in flight, each but the last is cut once more
    // and they finish one by one: fewer than two cuts a call, where sent on as many at once they
    // would cut each other for ever.
    expect(cut).toBeGreaterThan(0);
    expect(cut).toBeLessThan(2 * done.length);
    // Each stream the server cut was a request counted as cut, and none was journaled: the
    // journal holds one whole reply per call, each of it the schema's JSON.
    expect(r.llm.requests.get('cut')).toBe(cut);
    expect(r.llm.requests.get('answered')).toBe(6);
    expect(journal.puts).toHaveLength(6);
    for (const reply of journal.puts) expect(Mcq.safeParse(JSON.parse(reply.content)).success).toBe(true);
    expect(r.llm.concurrency()).toEqual([
      expect.objectContaining({ limit: 1, bound: 1, oneAtATime: true, inFlight: 0 }),
    ]);
    expect(r.logs.filter((l) => ONE_AT_A_TIME_LOG.test(l.msg))).toHaveLength(1);
    expect(memory.get(r.server.url, 'test-model')).toMatchObject({ interruptsStreams: true });

    // The next layer on the same memory sends one at a time from its first request: no cut, no log.
    r.server.resetStats();
    const next = await open({}, { memory }, r.server);
    await Promise.all([7, 8, 9, 10].map((i) => next.llm.complete(mcq(i))));
    expect(r.server.stats()).toMatchObject({ cut: 0, answered: 4, maxInFlight: 1 });
    expect(next.llm.concurrency()).toEqual([expect.objectContaining({ limit: 1, oneAtATime: true })]);
    expect(next.logs.filter((l) => ONE_AT_A_TIME_LOG.test(l.msg))).toHaveLength(0);
  }, 30_000);

  it('a stream cut with nothing else in flight is retried, counted, and teaches nothing', async () => {
    const journal = new WatchedJournal();
    const r = await open({}, { journal }, INTERRUPTING);
    // One call, its first stream cut by another client's request waiting for the one slot.
    const other = await open({ stream: false }, {}, r.server);
    const mine = r.llm.complete(mcq(1));
    await until(() => r.server.stats().inFlight === 1);
    await other.llm.complete(mcq(2));
    await mine;
    expect(r.server.stats().cut).toBe(1);
    expect(Object.fromEntries(r.llm.requests)).toEqual({ cut: 1, answered: 1 });
    expect(journal.puts).toHaveLength(1);
    expect(r.llm.concurrency()).toEqual([expect.objectContaining({ oneAtATime: false })]);
  }, 30_000);
});

describe('the body read by its Content-Type, whatever was asked', () => {
  it.each([
    ['one JSON body to a streamed request', 'answers-json', true],
    ['events to a whole request', 'answers-events', false],
    ['a JSON body with data: [DONE] glued after it, streamed', 'json-then-done', true],
    ['a JSON body with data: [DONE] glued after it, whole', 'json-then-done', false],
  ] as const)('%s: the reply, valid, in one request', async (_, dialect, stream) => {
    const journal = new WatchedJournal();
    const r = await open({ stream }, { journal }, { dialect: DIALECTS[dialect] });
    const done = await r.llm.complete(mcq(1));
    expect(Mcq.safeParse(done.value).success).toBe(true);
    expect(Object.fromEntries(r.llm.requests)).toEqual({ answered: 1 });
    expect(done.usage.outputTokens).toBeGreaterThan(0);
    expect(journal.puts).toHaveLength(1);
  });

  it("a body that is no chat completion for every input is the endpoint's fault: the calls wait, nothing is journaled, one fault names llm.baseUrl", async () => {
    const journal = new WatchedJournal();
    const faults: (EndpointFault | null)[] = [];
    const r = await open(
      { circuit: { failureThreshold: 8, probeIntervalMs: 200 } },
      { journal, onFault: (f) => faults.push(f) },
      { faults: { rate: 1, kinds: ['unreadable'] } },
    );
    const settled: string[] = [];
    const calls = [1, 2, 3, 4, 5, 6].map((i) =>
      r.llm.complete(mcq(i)).then(
        () => settled.push('ok'),
        (e: Error) => settled.push(e.name),
      ),
    );
    await until(() => faults.length > 0);
    expect(faults).toEqual([
      expect.objectContaining({
        configKey: 'llm.baseUrl',
        message: expect.stringMatching(/^the reply is no chat completion \(Content-Type text\/html/),
      }),
    ]);
    expect(settled).toEqual([]);
    expect(journal.puts).toEqual([]);
    // Retried as a server error is, until 5 inputs had failed alike with nothing answered.
    expect(r.llm.requests.get('unreadable')).toBeGreaterThanOrEqual(5);
    expect(r.llm.requests.get('answered')).toBeUndefined();
    r.llm.stop();
    await Promise.all(calls);
    expect(settled).toEqual(Array(6).fill(new LlmStoppedError('mcq').name));
  }, 30_000);
});
