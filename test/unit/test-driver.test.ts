import { describe, expect, it } from 'vitest';
import type { Processor } from '../../topology/processor.js';
import { TestDriver } from '../../topology/test-driver.js';
import { defineTopology } from '../../topology/topology.js';
import { sampleArticle } from '../fixtures/records.js';

const splitter: Processor = {
  name: 'splitter',
  reads: ['words'],
  writes: ['letters'],
  stores: ['seen'],
  async process(batch, ctx) {
    const seen = ctx.store('seen');
    for (const r of batch) {
      const word = r.value as string;
      if (seen.get(word)) continue;
      seen.put(word, true);
      for (const ch of word) ctx.emit('letters', ch, ch);
    }
  },
};

describe('test driver', () => {
  it('runs one processor in memory: several outputs per input, state across batches', async () => {
    const d = await TestDriver.forProcessor(splitter);
    await d.pipe('words', [{ value: 'abc' }, { value: 'de' }]);
    expect(await d.drain()).toBe(2);
    await d.pipe('words', [{ value: 'abc' }, { value: 'f' }]);
    await d.drain();
    expect((await d.values<string>('letters')).sort()).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    expect(d.state('splitter', 'seen', 'abc')).toBe(true);
    await d.close();
  });

  it('fires timers on the driver clock, not the wall clock', async () => {
    let ticks = 0;
    const timed: Processor = {
      name: 'ticker',
      reads: [],
      writes: ['ticks'],
      stores: [],
      async process() {},
      punctuate: {
        everyMs: 1000,
        async run(ctx) {
          ctx.emit('ticks', null, { at: ctx.now(), n: ++ticks });
        },
      },
    };
    const d = await TestDriver.forProcessor(timed);
    await d.advanceTime(999);
    expect(await d.values('ticks')).toEqual([]);
    await d.advanceTime(1);
    await d.advanceTime(1000);
    expect(await d.values('ticks')).toEqual([
      { at: 1000, n: 1 },
      { at: 2000, n: 2 },
    ]);
    await d.close();
  });

  it('validates with topic schemas: invalid input becomes a dead letter naming the field', async () => {
    const copier: Processor = {
      name: 'copier',
      reads: ['articles'],
      writes: ['out'],
      stores: [],
      async process(batch, ctx) {
        for (const r of batch) ctx.emit('out', r.key, (r.value as { id: string }).id);
      },
    };
    const topology = defineTopology({
      topics: [
        { name: 'articles', schema: 'article' },
        { name: 'out', schema: null },
        { name: 'dlq', schema: 'dead-letter' },
      ],
      processors: [copier],
    });
    const d = await TestDriver.create(topology);
    await expect(d.pipe('articles', [{ value: { ...sampleArticle, title: 7 } }])).rejects.toThrow(
      /title: Invalid input/,
    );
    await d.pipe('articles', [{ value: sampleArticle }]);
    await d.drain();
    expect(await d.values('out')).toEqual(['doi:10.1000/xyz']);
    await d.close();
  });

  it('refuses an emit to a topic the processor did not declare', async () => {
    const rogue: Processor = {
      ...splitter,
      name: 'rogue',
      async process(_batch, ctx) {
        ctx.emit('elsewhere', null, 1);
      },
    };
    const d = await TestDriver.forProcessor(rogue);
    await d.pipe('words', [{ value: 'x' }]);
    await d.drain();
    const [dl] = await d.values<{ reason: string }>('dlq');
    expect(dl?.reason).toMatch(/does not declare topic "elsewhere"/);
    await d.close();
  });
});

describe('embedded log maintenance', () => {
  it('keeps only the latest value per key on a compacted topic, and drops records past retention', async () => {
    const { EmbeddedRuntime } = await import('../../topology/runtime/embedded.js');
    const runtime = EmbeddedRuntime.open(':memory:');
    await runtime.ensureTopics([
      { name: 'latest', partitions: 1, compacted: true, retentionMs: null, schema: null, description: '' },
      { name: 'recent', partitions: 1, compacted: false, retentionMs: 1000, schema: null, description: '' },
    ]);
    await runtime.append([
      { topic: 'latest', key: 'a', value: '1' },
      { topic: 'latest', key: 'b', value: '2' },
      { topic: 'latest', key: 'a', value: '3' },
      { topic: 'recent', key: null, value: '"old"' },
    ]);
    expect(await runtime.maintain(Date.now() + 5000)).toBe(2);
    const latest = await runtime.read('latest', 0, 0, 10);
    expect(latest.map((r) => [r.key, r.value])).toEqual([
      ['b', '2'],
      ['a', '3'],
    ]);
    expect(await runtime.read('recent', 0, 0, 10)).toEqual([]);
    // Offsets are never reused: the next record continues after the removed ones.
    await runtime.append([{ topic: 'latest', key: 'c', value: '4' }]);
    expect((await runtime.read('latest', 0, 3, 10))[0]?.offset).toBe(3);
    await runtime.close();
  });
});
