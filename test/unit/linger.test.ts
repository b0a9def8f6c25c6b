import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { EngineMetrics } from '../../topology/metrics.js';
import type { Processor } from '../../topology/processor.js';
import { EmbeddedRuntime } from '../../topology/runtime/embedded.js';
import { ProcessorTask } from '../../topology/task.js';
import { defineTopology } from '../../topology/topology.js';

/** Batch sizes a sink-like processor saw when its input came in two appends, the second after its first poll. */
async function batchesSeen(lingerMs: number | undefined): Promise<number[]> {
  const runtime = EmbeddedRuntime.open(':memory:');
  const batches: number[] = [];
  const processor: Processor = {
    name: 'sink',
    reads: ['in'],
    writes: [],
    stores: [],
    sinks: ['test:batches'],
    batchSize: 100,
    ...(lingerMs === undefined ? {} : { lingerMs }),
    async process(batch) {
      batches.push(batch.length);
    },
  };
  const topology = defineTopology({
    topics: [
      { name: 'in', partitions: 1, schema: null },
      { name: 'dlq', schema: 'dead-letter' },
    ],
    processors: [processor],
  });
  await runtime.ensureTopics(topology.topics);
  const append = (from: number, n: number) =>
    runtime.append(Array.from({ length: n }, (_, i) => ({ topic: 'in', key: `k${from + i}`, value: '{}' })));
  // The second append lands once the task's first poll has returned its records.
  const openTask = runtime.openTask.bind(runtime);
  runtime.openTask = async (spec) => {
    const task = await openTask(spec);
    const poll = task.poll.bind(task);
    let first = true;
    task.poll = async (max, waitMs) => {
      const records = await poll(max, waitMs);
      if (records.length && first) {
        first = false;
        await append(3, 2);
      }
      return records;
    };
    return task;
  };
  const task = await new ProcessorTask(runtime, topology, processor, {
    log: pino({ level: 'silent' }),
    metrics: new EngineMetrics(),
  }).open();
  await append(0, 3);
  const stop = new AbortController();
  const running = task.run(stop.signal);
  const deadline = Date.now() + 10_000;
  while (task.committedInputs < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  stop.abort();
  await running;
  await runtime.close();
  return batches;
}

describe('a processor that lingers for more input (lingerMs)', () => {
  it('takes what arrives within its linger into the same step; without it, the next step', async () => {
    expect(await batchesSeen(500)).toEqual([5]);
    expect(await batchesSeen(undefined)).toEqual([3, 2]);
  });
});
