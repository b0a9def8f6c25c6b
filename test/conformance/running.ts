import pino from 'pino';
import { EngineMetrics } from '../../topology/metrics.js';
import type { Processor } from '../../topology/processor.js';
import type { Runtime } from '../../topology/runtime/types.js';
import { ProcessorTask } from '../../topology/task.js';
import type { Topology } from '../../topology/topology.js';

/**
 * A processor's task driven by run(), as `bioalchemy run` drives it (its commit interval and
 * overlapped commits), with silent logs; `stop` ends the run, committing what it has, and closes it.
 */
export async function startRunning(
  runtime: Runtime,
  topology: Topology,
  processor: Processor,
): Promise<{ task: ProcessorTask; stop(): Promise<void> }> {
  const task = await new ProcessorTask(runtime, topology, processor, {
    log: pino({ level: 'silent' }),
    metrics: new EngineMetrics(),
    pollWaitMs: 100,
  }).open();
  const abort = new AbortController();
  const running = task.run(abort.signal);
  return {
    task,
    async stop() {
      abort.abort();
      await running;
      await task.close();
    },
  };
}
