// One worker process of `npm run bench -- kafka-scale`: the bench processor on Kafka under a
// worker id, until SIGTERM. It holds its first step until "go" arrives on stdin, so that every
// worker has joined before the clock starts. Prints JSON lines: the runtime's logs (assignments,
// restores) and, at the end, its CPU time.
import pino from 'pino';
import { EngineMetrics } from '../topology/metrics.js';
import type { Processor } from '../topology/processor.js';
import { openRuntime } from '../topology/runtime/open.js';
import { ProcessorTask } from '../topology/task.js';
import { scaleBenchTopology } from './kafka-scale.js';

const [url, prefix, worker] = process.argv.slice(2) as [string, string, string];
const log = pino({ level: 'info', base: { worker } }, pino.destination(1));
let go: () => void = () => {};
const started = new Promise<void>((resolve) => {
  go = resolve;
});
process.stdin.on('data', (d: Buffer) => {
  if (d.toString().includes('go')) go();
});
const topology = scaleBenchTopology(prefix);
const inner = topology.processors[0]!;
const processor: Processor = {
  ...inner,
  async process(batch, ctx) {
    await started;
    await inner.process(batch, ctx);
  },
};
const runtime = await openRuntime(url, { worker, log });
const task = await new ProcessorTask(runtime, topology, processor, {
  log: log.child({ processor: processor.name }),
  metrics: new EngineMetrics(),
}).open();
const stop = new AbortController();
process.on('SIGTERM', () => stop.abort());
const cpu = process.cpuUsage();
await task.run(stop.signal);
const used = process.cpuUsage(cpu);
log.info({ cpuMs: (used.user + used.system) / 1000, inputs: task.committedInputs }, 'cpu');
await task.close();
await runtime.close();
process.exit(0);
