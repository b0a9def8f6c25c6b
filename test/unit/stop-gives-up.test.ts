import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { EngineMetrics } from '../../topology/metrics.js';
import { EmbeddedRuntime } from '../../topology/runtime/embedded.js';
import { ProcessorTask, RetryableError } from '../../topology/task.js';
import { defineTopology } from '../../topology/topology.js';
import { windowed } from '../../topology/window.js';

/**
 * A task stopped while its inputs' work is in flight: the work is given up (as the LLM layer gives
 * up its calls, with a RetryableError), and the task ends at once, committing nothing for those
 * inputs and dead-lettering none; the inputs finished before the stop commit.
 */
describe('stopping a task with work in flight', () => {
  it.each([
    ['window', true],
    ['step', false],
  ])('%s: ends promptly, the unfinished inputs neither committed nor dead-lettered', async (_, useWindow) => {
    const runtime = EmbeddedRuntime.open(':memory:');
    const stop = new AbortController();
    const gaveUp = new Promise<never>((_r, reject) =>
      stop.signal.addEventListener('abort', () => reject(new RetryableError('given up: stopping'))),
    );
    gaveUp.catch(() => {});
    const work = windowed<string>({
      name: 'slow',
      reads: ['in'],
      writes: ['out'],
      stores: [],
      window: {
        inFlight: 8,
        // k0 answers at once; the others wait on a call that only the stop ends.
        start: async (input) => (input.key === 'k0' ? 'done' : gaveUp),
        finish: (input, outcome, ctx) => {
          if (!outcome.ok) throw outcome.error;
          ctx.emit('out', input.key, outcome.value);
        },
      },
    });
    // Without a window, process() runs the work inside the step (windowed's fallback).
    const processor = useWindow ? work : { ...work, window: undefined };
    const topology = defineTopology({
      topics: [
        { name: 'in', partitions: 1, schema: null },
        { name: 'out', partitions: 1, schema: null },
        { name: 'dlq', schema: 'dead-letter' },
      ],
      processors: [processor],
    });
    await runtime.ensureTopics(topology.topics);
    await runtime.append(['k0', 'k1', 'k2'].map((key) => ({ topic: 'in', key, value: '{}' })));
    const task = await new ProcessorTask(runtime, topology, processor, {
      log: pino({ level: 'silent' }),
      metrics: new EngineMetrics(),
      batchSize: useWindow ? 8 : 1,
    }).open();
    const running = task.run(stop.signal);
    const deadline = Date.now() + 10_000;
    while (task.committedInputs < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(task.committedInputs).toBe(1);
    const stoppedAt = performance.now();
    stop.abort();
    await running;
    expect(performance.now() - stoppedAt).toBeLessThan(2_000);
    await task.close();
    expect((await runtime.read('dlq', 0, 0, 10)).length).toBe(0);
    expect((await runtime.read('out', 0, 0, 10)).map((r) => r.key)).toEqual(['k0']);
    // Read again at the next start: only k0 is committed.
    expect((await runtime.committedOffsets('slow', ['in'])).get('in\u00000')).toBe(1);
    await runtime.close();
  });
});
