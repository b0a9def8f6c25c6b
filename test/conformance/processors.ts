import { mapConcurrent, type Processor } from '../../topology/processor.js';
import { defineTopology, type Topology } from '../../topology/topology.js';
import { windowed } from '../../topology/window.js';

export interface Numbered {
  n: number;
}

/**
 * The conformance processor: every input {n} becomes two outputs {n, copy} and bumps a counter in
 * its store, so a duplicate or a loss shows up in the outputs and in the state alike.
 */
export function doubler(opts: {
  input: string;
  output: string;
  delayMs?: number;
  concurrency?: number;
  batchSize?: number;
}): Processor {
  return {
    name: `doubler-${opts.input}`,
    reads: [opts.input],
    writes: [opts.output],
    stores: ['count'],
    batchSize: opts.batchSize,
    async process(batch, ctx) {
      // Slow work runs concurrently inside the step, like LLM calls do.
      await mapConcurrent(batch, opts.concurrency ?? 8, async () => {
        if (opts.delayMs) await new Promise((r) => setTimeout(r, opts.delayMs));
      });
      const count = ctx.store('count');
      for (const r of batch) {
        const { n } = r.value as Numbered;
        ctx.emit(opts.output, String(n), { n, copy: 0 });
        ctx.emit(opts.output, String(n), { n, copy: 1 });
        count.put('total', (count.get<number>('total') ?? 0) + 1);
      }
    },
  };
}

/**
 * The doubler with its slow work windowed, as the LLM stages run: each input waits latencyMs(n)
 * outside any step, and `seen` tracks how many are in flight at once.
 */
export function windowedDoubler(opts: {
  input: string;
  output: string;
  inFlight: number;
  batchSize?: number;
  latencyMs: (n: number) => number;
  seen?: { now: number; max: number };
}): Processor {
  const seen = opts.seen ?? { now: 0, max: 0 };
  return windowed<number>({
    name: `windowed-${opts.input}`,
    reads: [opts.input],
    writes: [opts.output],
    stores: ['count'],
    batchSize: opts.batchSize,
    window: {
      inFlight: opts.inFlight,
      async start(input) {
        const { n } = input.value as Numbered;
        seen.max = Math.max(seen.max, ++seen.now);
        await new Promise((r) => setTimeout(r, opts.latencyMs(n)));
        seen.now--;
        return n;
      },
      finish(_input, outcome, ctx) {
        if (!outcome.ok) throw outcome.error;
        ctx.emit(opts.output, String(outcome.value), { n: outcome.value, copy: 0 });
        ctx.emit(opts.output, String(outcome.value), { n: outcome.value, copy: 1 });
        const count = ctx.store('count');
        count.put('total', (count.get<number>('total') ?? 0) + 1);
      },
    },
  });
}

/** Topic names carry a prefix so suites can share one Kafka broker. */
export function conformanceTopology(
  prefix: string,
  processors: (t: { input: string; output: string }) => Processor[],
): Topology {
  const input = `${prefix}.in`;
  const output = `${prefix}.out`;
  return defineTopology({
    topics: [
      { name: input, partitions: 3, schema: null },
      { name: output, partitions: 3, schema: null },
      { name: `${prefix}.dlq`, partitions: 1, schema: 'dead-letter' },
    ],
    processors: processors({ input, output }),
    deadLetterTopic: `${prefix}.dlq`,
  });
}

/**
 * The scale-out processor: the doubler's outputs, and a counter store per input partition with a
 * total and one count per residue of n mod 7, so the store has several keys in every partition
 * and a partition whose state were rebuilt from zero after moving would undercount.
 */
export function counter(opts: { input: string; output: string; delayMs?: number }): Processor {
  return {
    name: `counter-${opts.input}`,
    reads: [opts.input],
    writes: [opts.output],
    stores: ['count'],
    batchSize: 25,
    async process(batch, ctx) {
      if (opts.delayMs) await new Promise((r) => setTimeout(r, opts.delayMs));
      const count = ctx.store('count');
      for (const r of batch) {
        const { n } = r.value as Numbered;
        ctx.emit(opts.output, String(n), { n, copy: 0 });
        ctx.emit(opts.output, String(n), { n, copy: 1 });
        count.put('total', (count.get<number>('total') ?? 0) + 1);
        count.put(`mod7:${n % 7}`, (count.get<number>(`mod7:${n % 7}`) ?? 0) + 1);
      }
    },
  };
}

/** Six partitions in and out: three workers of the counter get two each. */
export function scaleTopology(prefix: string, delayMs = 5): Topology {
  const input = `${prefix}.in`;
  const output = `${prefix}.out`;
  return defineTopology({
    topics: [
      { name: input, partitions: 6, schema: null },
      { name: output, partitions: 6, schema: null },
      { name: `${prefix}.dlq`, partitions: 1, schema: 'dead-letter' },
    ],
    processors: [counter({ input, output, delayMs })],
    deadLetterTopic: `${prefix}.dlq`,
  });
}
