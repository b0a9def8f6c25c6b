import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { sampleArticle } from '../test/fixtures/records.js';
import { EngineMetrics } from '../topology/metrics.js';
import type { Processor } from '../topology/processor.js';
import { EmbeddedRuntime } from '../topology/runtime/embedded.js';
import { ProcessorTask } from '../topology/task.js';
import { defineTopology } from '../topology/topology.js';
import { pairedRates, ratioLine, timed } from './harness.js';

const N = 50_000;
const BATCH = 256;

/** Pass-through: every article is validated on the way in and on the way out, like a real step. */
const passThrough: Processor = {
  name: 'pass-through',
  reads: ['in'],
  writes: ['out'],
  stores: [],
  batchSize: BATCH,
  async process(batch, ctx) {
    for (const r of batch) ctx.emit('out', r.key, r.value);
  },
};

/**
 * Records/s through one processor on the embedded log, next to the raw append speed of the same
 * SQLite log with the same records and batch size, measured in the same run.
 */
export async function run(): Promise<string[]> {
  const lines: string[] = [];
  for (const schema of [null, 'article'] as const) {
    const topology = defineTopology({
      topics: [
        { name: 'in', schema },
        { name: 'out', schema },
        { name: 'dlq', schema: 'dead-letter' },
      ],
      processors: [passThrough],
    });
    const records = Array.from({ length: N }, (_, i) => {
      const value = JSON.stringify({
        ...sampleArticle,
        id: `pmid:${i}`,
        abstract: `Abstract number ${i}. `.repeat(20),
      });
      return { topic: 'in', key: `pmid:${i}`, value };
    });
    let dir = '';
    let runtime: EmbeddedRuntime | undefined;
    const fresh = async () => {
      await runtime?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
      dir = mkdtempSync(join(tmpdir(), 'bench-embedded-'));
      runtime = EmbeddedRuntime.open(dir);
      await runtime.ensureTopics(topology.topics);
    };

    const raw = async () => {
      await fresh();
      const ms = await timed(async () => {
        for (let i = 0; i < N; i += BATCH) await runtime!.append(records.slice(i, i + BATCH));
      });
      return { ms, records: N };
    };
    const processed = async () => {
      await fresh();
      for (let i = 0; i < N; i += 10_000) await runtime!.append(records.slice(i, i + 10_000));
      const task = await new ProcessorTask(runtime!, topology, passThrough, {
        log: pino({ level: 'silent' }),
        metrics: new EngineMetrics(),
      }).open();
      const ms = await timed(async () => {
        for (let done = 0; done < N; ) done += await task.step(0);
      });
      await task.close();
      return { ms, records: N };
    };
    const rates = await pairedRates(processed, raw);
    await runtime?.close();
    rmSync(dir, { recursive: true, force: true });
    lines.push(
      ratioLine(
        `embedded, one processor, schema ${schema ?? 'none'}`,
        rates.figure,
        'raw SQLite append of the same records',
        rates.baseline,
      ),
    );
  }
  return lines;
}
