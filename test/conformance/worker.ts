// One worker process of a scaled-out processor (the scale and zombie tests): runs the counter on
// Kafka as `bioalchemy run --processors` does, until SIGTERM. Logs are JSON lines on stdout: the
// runtime's (assignments, restores, with the worker id) and the task's warnings (refused commits).
import pino from 'pino';
import { EngineMetrics } from '../../topology/metrics.js';
import { openRuntime } from '../../topology/runtime/open.js';
import { ProcessorTask } from '../../topology/task.js';
import { scaleTopology } from './processors.js';

const [url, prefix, worker, pace] = process.argv.slice(2) as [string, string, string, string?];
const log = pino(
  { level: process.env.SCALE_DEBUG ? 'debug' : 'info', base: { worker } },
  pino.destination(1),
);
const topology = scaleTopology(prefix, pace === 'slow' ? 40 : 5);
const processor = topology.processors[0]!;
const runtime = await openRuntime(url, { worker, log });
const task = await new ProcessorTask(runtime, topology, processor, {
  log: log.child({ processor: processor.name }),
  metrics: new EngineMetrics(),
  pollWaitMs: 100,
}).open();
const stop = new AbortController();
process.on('SIGTERM', () => stop.abort());
const running = task.run(stop.signal);
const reporting = setInterval(() => {
  if (task.committedInputs > 0) log.info({ committed: task.committedInputs }, 'committing');
}, 200);
await running;
clearInterval(reporting);
await task.close();
await runtime.close();
log.info('stopped');
// kafkajs can keep a socket open after its clients disconnect: end here, as `bioalchemy` does.
process.exit(0);
