// A processing process for the kill -9 test: runs the doubler until all input is committed.
import pino from 'pino';
import { EngineMetrics } from '../../topology/metrics.js';
import { openRuntime } from '../../topology/runtime/open.js';
import { ProcessorTask } from '../../topology/task.js';
import { conformanceTopology, doubler } from './processors.js';

const [url, prefix, totalText, pace] = process.argv.slice(2) as [string, string, string, string];
const total = Number(totalText);
const topology = conformanceTopology(prefix, (t) =>
  pace === 'slow' ? [doubler({ ...t, delayMs: 2, batchSize: 40 })] : [doubler({ ...t, batchSize: 500 })],
);
const processor = topology.processors[0]!;
const runtime = await openRuntime(url);
const task = await new ProcessorTask(runtime, topology, processor, {
  log: pino({ level: 'silent' }),
  metrics: new EngineMetrics(),
}).open();
let reported = false;
for (;;) {
  const n = await task.step(100);
  if (n > 0 && !reported) {
    process.stdout.write('committing\n');
    reported = true;
  }
  if (n === 0 && Number(task.readState('count', 'total') ?? 0) >= total) break;
}
await task.close();
await runtime.close();
