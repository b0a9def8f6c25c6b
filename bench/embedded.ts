import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { sampleArticle } from '../test/fixtures/records.js';
import { TopicCodecs } from '../topology/codec.js';
import { EngineMetrics } from '../topology/metrics.js';
import type { Processor } from '../topology/processor.js';
import { EmbeddedRuntime } from '../topology/runtime/embedded.js';
import { ProcessorTask } from '../topology/task.js';
import { defineTopology } from '../topology/topology.js';
import { pairedRates, ratioLine, timed } from './harness.js';

const N = 50_000;
const BATCH = 256;

/**
 * Pass-through. `emit`: every article is parsed and validated on the way in and on the way out,
 * like a transforming step. `forward`: inputs an upstream step wrote (stamped) are handed on
 * unchanged with ctx.forward, so only the engine's own work is left.
 */
const passThrough = (mode: 'emit' | 'forward'): Processor => ({
  name: 'pass-through',
  reads: ['in'],
  writes: ['out'],
  stores: [],
  batchSize: BATCH,
  async process(batch, ctx) {
    if (mode === 'forward') for (const r of batch) ctx.forward(r, 'out');
    else for (const r of batch) ctx.emit('out', r.key, r.value);
  },
});

/**
 * Records/s through one processor on the embedded log, next to the raw append speed of the same
 * SQLite log with the same records and batch size, measured in the same run.
 */
export async function run(): Promise<string[]> {
  const lines: string[] = [];
  const variants = [
    { schema: null, mode: 'emit' },
    { schema: 'article', mode: 'emit' },
    { schema: 'article', mode: 'forward' },
  ] as const;
  for (const { schema, mode } of variants) {
    const processor = passThrough(mode);
    const topology = defineTopology({
      topics: [
        { name: 'in', schema },
        { name: 'out', schema },
        { name: 'dlq', schema: 'dead-letter' },
      ],
      processors: [processor],
    });
    const codecs = new TopicCodecs(topology);
    const records = Array.from({ length: N }, (_, i) => {
      const value = JSON.stringify({
        ...sampleArticle,
        id: `pmid:${i}`,
        abstract: `Abstract number ${i}. `.repeat(20),
      });
      // Emit's input comes unstamped, as from outside, so it is validated on the way in too.
      return {
        topic: 'in',
        key: `pmid:${i}`,
        value,
        validatedAs: mode === 'forward' ? codecs.stampOf('in') : undefined,
      };
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
      const task = await new ProcessorTask(runtime!, topology, processor, {
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
        `embedded, one processor (${mode}), schema ${schema ?? 'none'}`,
        rates.figure,
        'raw SQLite append of the same records',
        rates.baseline,
      ),
    );
  }
  return lines;
}
