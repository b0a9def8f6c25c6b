import { describe, expect, it } from 'vitest';
import type { Processor } from '../../topology/processor.js';
import { TestDriver } from '../../topology/test-driver.js';

describe('StepContext.onCommit', () => {
  it('runs once the step has committed, never for an attempt that failed and was replayed', async () => {
    const counted: string[] = [];
    let attempts = 0;
    const flaky: Processor = {
      name: 'flaky',
      reads: ['in'],
      writes: ['out'],
      stores: [],
      async process(batch, ctx) {
        attempts++;
        for (const r of batch) {
          ctx.emit('out', null, r.value);
          ctx.onCommit(() => counted.push(r.value as string));
        }
        // The first attempt fails after asking for its callbacks: they must not run.
        if (attempts === 1) throw new Error('first attempt fails');
      },
    };
    const d = await TestDriver.forProcessor(flaky);
    try {
      await d.pipe('in', [{ value: 'a' }, { value: 'b' }]);
      await d.drain();
      expect(attempts).toBe(2);
      expect(await d.values('out')).toEqual(['a', 'b']);
      expect(counted).toEqual(['a', 'b']);
    } finally {
      await d.close();
    }
  });
});
