import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EndpointMemory } from '../../llm/endpoint-memory.js';
import { DIALECTS } from '../llm-server/dialects.js';
import { start } from '../llm-server/server.js';
import { mcq, rig } from './helpers.js';

/**
 * What the layer learns of an endpoint's model (EndpointMemory): kept in a file, read by the next
 * layer on the same file, so that it pays no refused request, no cut-off reply and no ramp again.
 */
/** A fresh file for a memory, in a folder of its own. */
const memoryFile = () => join(mkdtempSync(join(tmpdir(), 'bioalchemy-memory-')), 'llm-endpoints.json');

describe('EndpointMemory', () => {
  it('a dialect learned from a refusal is not refused again by the next layer on the same file', async () => {
    const file = memoryFile();
    const server = await start({ dialect: DIALECTS['llama-cpp-python'] });
    try {
      const first = await rig({}, { memory: EndpointMemory.open(file) }, server);
      await first.llm.complete(mcq(1));
      await first.close();
      expect(server.stats().refusedByDialect).toEqual({ 500: 1 });
      const kept = JSON.parse(readFileSync(file, 'utf8'));
      expect(Object.values(kept.endpoints)).toEqual([
        expect.objectContaining({ dialect: expect.objectContaining({ responseFormat: 'json_object' }) }),
      ]);

      server.resetStats();
      const second = await rig({}, { memory: EndpointMemory.open(file) }, server);
      await second.llm.complete(mcq(2));
      await second.close();
      expect(server.stats()).toMatchObject({ requests: 1, answered: 1, refusedByDialect: {} });
    } finally {
      await server.stop();
    }
  });

  it('a thinking budget learned from a cut-off reply is where the next layer starts', async () => {
    const file = memoryFile();
    const server = await start({ dialect: DIALECTS['vllm-reasoning'] });
    try {
      const first = await rig({}, { memory: EndpointMemory.open(file) }, server);
      await first.llm.complete(mcq(1));
      await first.close();
      // Cut off at 1,024 while thinking, answered at 8,192.
      expect(first.records.map((r) => r.outputTokens >= 1024)).toEqual([true, true]);
      const second = await rig({}, { memory: EndpointMemory.open(file) }, server);
      await second.llm.complete(mcq(2));
      await second.close();
      expect(second.records).toHaveLength(1);
    } finally {
      await server.stop();
    }
  });

  it('the concurrency limit found is where the next layer starts: no ramp from 1', async () => {
    const file = memoryFile();
    const server = await start({ slots: 8, latency: { kind: 'fixed', ms: 300 } });
    const burst = async (memory: EndpointMemory, from: number) => {
      server.resetStats();
      const r = await rig({}, { memory }, server);
      await Promise.all(Array.from({ length: 8 }, (_, i) => r.llm.complete(mcq(from + i))));
      await r.close();
      return server.stats().maxInFlight;
    };
    try {
      const found = await rig({}, { memory: EndpointMemory.open(file) }, server);
      await Promise.all(Array.from({ length: 120 }, (_, i) => found.llm.complete(mcq(i))));
      const limit = found.llm.concurrency()[0]!.limit;
      await found.close();
      expect(limit).toBeGreaterThanOrEqual(8);
      // Eight at once from the first request with the file; a fresh layer ramps up from 1.
      expect(await burst(EndpointMemory.open(file), 1000)).toBe(8);
      expect(await burst(EndpointMemory.inMemory(), 2000)).toBeLessThan(8);
    } finally {
      await server.stop();
    }
  }, 60_000);
});
