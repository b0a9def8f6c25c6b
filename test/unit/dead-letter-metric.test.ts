import { describe, expect, it } from 'vitest';
import type { DeadLetter } from '../../schemas/dead-letter.js';
import type { Processor } from '../../topology/processor.js';
import { TestDriver } from '../../topology/test-driver.js';

/** Refuses every word: 'x' through deadLetter(), anything else as a dead letter it makes itself (as ingest does). */
const refuser: Processor = {
  name: 'refuser',
  reads: ['words'],
  writes: ['dlq'],
  stores: [],
  async process(batch, ctx) {
    for (const r of batch) {
      const word = r.value as string;
      if (word === 'x') ctx.deadLetter(r, 'not-english', `"${word}" is not English`);
      else {
        const made: DeadLetter = {
          id: `made-${word}`,
          code: 'too-large',
          reason: `"${word}" is too long`,
          processor: 'sources/fake',
          origin: { kind: 'file', path: 'f.txt', position: null },
          payload: word,
        };
        ctx.emit('dlq', made.id, made);
      }
    }
  },
};

describe('bioalchemy_dead_letters_total', () => {
  it('counts dead letters by processor and code, made by deadLetter() or emitted whole', async () => {
    const d = await TestDriver.forProcessor(refuser);
    await d.pipe('words', [{ value: 'x' }, { value: 'long' }, { value: 'longer' }, { value: 'x' }]);
    await d.drain();
    const values = (await d.metrics.deadLetters.get()).values;
    expect(values.map((v) => [v.labels.processor, v.labels.code, v.value]).sort()).toEqual([
      ['refuser', 'not-english', 2],
      ['refuser', 'too-large', 2],
    ]);
    expect((await d.values<DeadLetter>('dlq')).map((dl) => dl.code).sort()).toEqual([
      'not-english',
      'not-english',
      'too-large',
      'too-large',
    ]);
    await d.close();
  });
});
