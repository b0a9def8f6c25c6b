// One worker process of `npm run bench -- kafka-scale`: the bench processor on Kafka under a
// worker id, until SIGTERM. Prints JSON lines: the runtime's logs (assignments, restores) and, at
// the end, its CPU time.
import pino from 'pino';
import { EngineMetrics } from '../topology/metrics.js';
import { openRuntime } from '../topology/runtime/open.js';
import { ProcessorTask } from '../topology/task.js';
import { scaleBenchTopology } from './kafka-scale.js';

const [url, prefix, worker] = process.argv.slice(2) as [string, string, string];
const log = pino({ level: 'info', base: { worker } }, pino.destination(1));
const topology = scaleBenchTopology(prefix);
const processor = topology.processors[0]!;
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
