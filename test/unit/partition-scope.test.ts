import { describe, expect, it } from 'vitest';
import type { Processor } from '../../topology/processor.js';
import { TestDriver } from '../../topology/test-driver.js';
import { defineTopology } from '../../topology/topology.js';

/** Counts its inputs in its store, and on its timer emits what the store it sees holds. */
const counting = (scope?: 'partition' | 'global'): Processor => ({
  name: 'counting',
  reads: ['in'],
  writes: ['out'],
  stores: ['count'],
  ...(scope ? { scope } : {}),
  async process(batch, ctx) {
    const count = ctx.store('count');
    count.put('n', (count.get<number>('n') ?? 0) + batch.length);
  },
  punctuate: {
    everyMs: 1000,
    async run(ctx) {
      ctx.emit('out', null, ctx.store('count').get<number>('n') ?? 0);
    },
  },
});

const topics = [
  { name: 'in', partitions: 3, schema: null },
  { name: 'out', partitions: 1, schema: null },
  { name: 'dlq', partitions: 1, schema: 'dead-letter' as const },
];

describe('partition-scoped state', () => {
  it('keeps a store per input partition, and runs the timer once per partition in its scope', async () => {
    const d = await TestDriver.create(defineTopology({ topics, processors: [counting()] }));
    await d.pipe(
      'in',
      Array.from({ length: 30 }, (_, i) => ({ key: `k${i}`, value: i })),
    );
    await d.drain();
    const perPartition = [0, 1, 2].map((p) => d.state<number>('counting', 'count', 'n', p) ?? 0);
    expect(perPartition.reduce((a, b) => a + b, 0)).toBe(30);
    expect(perPartition.every((n) => n > 0 && n < 30)).toBe(true);
    await d.advanceTime(1000);
    expect((await d.values<number>('out')).sort((a, b) => a - b)).toEqual(
      [...perPartition].sort((a, b) => a - b),
    );
    await d.close();
  });

  it("keeps one store for a 'global' processor, and runs its timer once", async () => {
    const d = await TestDriver.create(defineTopology({ topics, processors: [counting('global')] }));
    await d.pipe(
      'in',
      Array.from({ length: 30 }, (_, i) => ({ key: `k${i}`, value: i })),
    );
    await d.drain();
    expect(d.state<number>('counting', 'count', 'n')).toBe(30);
    await d.advanceTime(1000);
    expect(await d.values<number>('out')).toEqual([30]);
    await d.close();
  });

  it('refuses per-partition state over inputs with different partition counts', () => {
    const twoInputs: Processor = { ...counting(), reads: ['in', 'one'] };
    const build = (scope?: 'global') =>
      defineTopology({
        topics: [...topics, { name: 'one', partitions: 1, schema: null }],
        processors: [{ ...twoInputs, ...(scope ? { scope } : {}) }],
      });
    expect(() => build()).toThrow(
      /processor "counting" keeps state per partition over inputs with different partition counts \(in: 3, one: 1\)/,
    );
    expect(() => build('global')).not.toThrow();
  });
});
