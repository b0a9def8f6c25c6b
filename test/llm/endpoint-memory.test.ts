import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENDPOINTS_TOPIC, EndpointMemory } from '../../llm/index.js';
import { EmbeddedRuntime } from '../../topology/runtime/embedded.js';
import { DIALECTS } from '../llm-server/dialects.js';
import { start } from '../llm-server/server.js';
import { mcq, rig } from './helpers.js';

/**
 * What the layer learns of an endpoint's model (EndpointMemory): kept on the log's llm.endpoints,
 * read by the next layer on the same log, so that it pays no refused request, no cut-off reply
 * and no ramp again. The Kafka runtime keeps it the same way (test/services/endpoint-memory-kafka).
 */
/** A data folder of its own; each `open` is a process starting on it (a restart). */
function dataFolder() {
  const dir = mkdtempSync(join(tmpdir(), 'bioalchemy-memory-'));
  const runtimes: EmbeddedRuntime[] = [];
  return {
    async open(): Promise<{ runtime: EmbeddedRuntime; memory: EndpointMemory }> {
      const runtime = EmbeddedRuntime.open(dir);
      runtimes.push(runtime);
      await runtime.ensureTopics([ENDPOINTS_TOPIC]);
      return { runtime, memory: await EndpointMemory.open(runtime) };
    },
    async close() {
      for (const r of runtimes) await r.close();
    },
  };
}

const keysOn = async (runtime: EmbeddedRuntime) =>
  (await runtime.read(ENDPOINTS_TOPIC.name, 0, 0, 100)).map((r) => r.key);

describe('EndpointMemory', () => {
  it('a dialect learned from a refusal is not refused again by the next layer on the same log', async () => {
    const folder = dataFolder();
    const server = await start({ dialect: DIALECTS['llama-cpp-python'] });
    try {
      const first = await folder.open();
      const firstRig = await rig({}, { memory: first.memory }, server);
      await firstRig.llm.complete(mcq(1));
      await firstRig.close();
      expect(server.stats().refusedByDialect).toEqual({ 500: 1 });
      expect(await keysOn(first.runtime)).toContain(`${server.url} test-model dialect.responseFormat`);

      server.resetStats();
      const second = await folder.open();
      expect(second.memory.get(server.url, 'test-model').dialect).toMatchObject({
        responseFormat: 'json_object',
      });
      const secondRig = await rig({}, { memory: second.memory }, server);
      await secondRig.llm.complete(mcq(2));
      await secondRig.close();
      expect(server.stats()).toMatchObject({ requests: 1, answered: 1, refusedByDialect: {} });
    } finally {
      await server.stop();
      await folder.close();
    }
  });

  it('a thinking budget learned from a cut-off reply is where the next layer starts', async () => {
    const folder = dataFolder();
    const server = await start({ dialect: DIALECTS['vllm-reasoning'] });
    try {
      const first = await rig({}, { memory: (await folder.open()).memory }, server);
      await first.llm.complete(mcq(1));
      await first.close();
      // Cut off at 1,024 while thinking, answered at 8,192.
      expect(first.records.map((r) => r.outputTokens >= 1024)).toEqual([true, true]);
      const second = await rig({}, { memory: (await folder.open()).memory }, server);
      await second.llm.complete(mcq(2));
      await second.close();
      expect(second.records).toHaveLength(1);
    } finally {
      await server.stop();
      await folder.close();
    }
  });

  it('the concurrency limit found is where the next layer starts: no ramp from 1', async () => {
    const folder = dataFolder();
    const server = await start({ slots: 8, latency: { kind: 'fixed', ms: 300 } });
    // Whole replies: a streamed reply's first chunk ramps a fresh layer to the slots within one
    // reply (adaptive-limit.ts), which would hide the ramp this compares with.
    const burst = async (memory: EndpointMemory, from: number) => {
      server.resetStats();
      const r = await rig({ stream: false }, { memory }, server);
      await Promise.all(Array.from({ length: 8 }, (_, i) => r.llm.complete(mcq(from + i))));
      await r.close();
      return server.stats().maxInFlight;
    };
    try {
      const found = await rig({}, { memory: (await folder.open()).memory }, server);
      await Promise.all(Array.from({ length: 120 }, (_, i) => found.llm.complete(mcq(i))));
      const limit = found.llm.concurrency()[0]!.limit;
      await found.close();
      expect(limit).toBeGreaterThanOrEqual(8);
      // Eight at once from the first request with the log's facts; a fresh layer ramps up from 1.
      expect(await burst((await folder.open()).memory, 1000)).toBe(8);
      expect(await burst(EndpointMemory.inMemory(), 2000)).toBeLessThan(8);
    } finally {
      await server.stop();
      await folder.close();
    }
  }, 60_000);

  it('one at a time, learned from a server that ends a stream when another request arrives, is kept on the log: the next layer sends one at a time and is cut no more', async () => {
    const folder = dataFolder();
    // llama-cpp-python's interrupt_requests, one slot (test/llm-server/dialects.ts).
    const server = await start({
      dialect: DIALECTS.interrupt,
      slots: 1,
      latency: { kind: 'fixed', ms: 150 },
    });
    try {
      const first = await folder.open();
      const learning = await rig({}, { memory: first.memory }, server);
      await Promise.all([1, 2, 3, 4].map((i) => learning.llm.complete(mcq(i))));
      await learning.close();
      expect(server.stats().cut).toBeGreaterThan(0);
      expect(await keysOn(first.runtime)).toContain(`${server.url} test-model interruptsStreams`);

      server.resetStats();
      const next = await rig({}, { memory: (await folder.open()).memory }, server);
      await Promise.all([5, 6, 7, 8].map((i) => next.llm.complete(mcq(i))));
      // Bound at 1 by the fact, not only started there by the limit found (which rounds may raise).
      expect(next.llm.concurrency()).toEqual([
        expect.objectContaining({ limit: 1, bound: 1, oneAtATime: true }),
      ]);
      await next.close();
      expect(server.stats()).toMatchObject({ cut: 0, answered: 4, maxInFlight: 1 });
    } finally {
      await server.stop();
      await folder.close();
    }
  }, 30_000);

  it('two workers learning different facts of one model at once both keep theirs through compaction', async () => {
    const folder = dataFolder();
    try {
      const [a, b] = [await folder.open(), await folder.open()];
      a.memory.learn('http://llm', 'm', { dialect: { temperature: false }, contextTokens: 4096 });
      b.memory.learn('http://llm', 'm', { dialect: { maxTokens: false }, concurrencyLimit: 3 });
      // The same fact learned again with a new value: the later one is kept.
      b.memory.learn('http://llm', 'm', { concurrencyLimit: 5 });
      // Learned again unchanged: nothing appended.
      a.memory.learn('http://llm', 'm', { contextTokens: 4096 });
      await Promise.all([a.memory.written(), b.memory.written()]);
      expect(await a.runtime.endOffsets(ENDPOINTS_TOPIC.name)).toEqual([5]);
      await a.runtime.maintain(Date.now() + 3_600_000);
      const restarted = await folder.open();
      expect(await keysOn(restarted.runtime)).toHaveLength(4);
      expect(restarted.memory.get('http://llm', 'm')).toEqual({
        dialect: { temperature: false, maxTokens: false },
        contextTokens: 4096,
        concurrencyLimit: 5,
      });
      expect(restarted.memory.get('http://llm', 'other')).toEqual({});
    } finally {
      await folder.close();
    }
  });

  it("forget: one endpoint's facts go (a tombstone each), the others stay", async () => {
    const folder = dataFolder();
    try {
      const { runtime, memory } = await folder.open();
      memory.learn('http://a', 'm', { contextTokens: 4096, dialect: { temperature: false } });
      memory.learn('http://b', 'm', { concurrencyLimit: 2 });
      await memory.written();
      expect(await EndpointMemory.forget(runtime, 'http://a')).toBe(2);
      const restarted = (await folder.open()).memory;
      expect(restarted.get('http://a', 'm')).toEqual({});
      expect(restarted.get('http://b', 'm')).toEqual({ concurrencyLimit: 2 });
      expect(await EndpointMemory.forget(runtime)).toBe(1);
      expect((await folder.open()).memory.get('http://b', 'm')).toEqual({});
    } finally {
      await folder.close();
    }
  });

  it('a record that is no fact is skipped and counted: what it said is learned again', async () => {
    const folder = dataFolder();
    try {
      const { runtime } = await folder.open();
      await runtime.append([
        {
          topic: ENDPOINTS_TOPIC.name,
          key: 'x',
          value: '{"endpoint":"e","model":"m","facts":{"limit":"many"}}',
          partition: 0,
        },
        { topic: ENDPOINTS_TOPIC.name, key: 'y', value: 'not json', partition: 0 },
        {
          topic: ENDPOINTS_TOPIC.name,
          key: 'e m contextTokens',
          value: JSON.stringify({ endpoint: 'e', model: 'm', facts: { contextTokens: 2048 } }),
          partition: 0,
        },
      ]);
      const reads: { facts: number; unreadable: number }[] = [];
      const memory = await EndpointMemory.open(runtime, { onRead: (r) => reads.push(r) });
      expect(reads).toEqual([{ facts: 1, unreadable: 2 }]);
      expect(memory.get('e', 'm')).toEqual({ contextTokens: 2048 });
    } finally {
      await folder.close();
    }
  });
});
