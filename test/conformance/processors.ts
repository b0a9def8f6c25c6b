import { mapConcurrent, type Processor } from '../../topology/processor.js';
import { defineTopology, type Topology } from '../../topology/topology.js';

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
