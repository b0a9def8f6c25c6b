import type { Logger } from 'pino';
import type { Health } from './health.js';
import { EngineMetrics } from './metrics.js';
import type { Processor } from './processor.js';
import { partitionKey } from './records.js';
import type { Runtime } from './runtime/types.js';
import { ProcessorTask } from './task.js';
import type { Topology } from './topology.js';

export interface RunOptions {
  readonly log: Logger;
  readonly metrics?: EngineMetrics;
  readonly signal: AbortSignal;
  /** Names of processors to run; default: every processor that is not a placeholder. */
  readonly only?: readonly string[];
  readonly batchSize?: (processor: string) => number | undefined;
  readonly commitIntervalMs?: (processor: string) => number | undefined;
  /** Most inputs a processor takes in this run; the rest stay queued (see TaskOptions.maxInputs). */
  readonly maxInputs?: (processor: string) => number | undefined;
  readonly maintainEveryMs?: number;
  readonly lagEveryMs?: number;
  /** Stop once every processor has read its input to the end and nothing is in flight (`run --until-idle`). */
  readonly untilIdle?: boolean;
  /** How often untilIdle looks. */
  readonly idleCheckMs?: number;
  /** How long every task must stay idle, committing nothing, before untilIdle stops. */
  readonly idleQuietMs?: number;
  /** Told when the tasks are open and when they stop (/readyz). */
  readonly health?: Health;
}

/** Records each processor has not committed yet, summed over its input partitions. */
export async function updateLag(
  runtime: Runtime,
  processors: readonly Processor[],
  metrics: EngineMetrics,
): Promise<void> {
  for (const p of processors) {
    const committed = await runtime.committedOffsets(p.name, p.reads);
    let behind = 0;
    for (const topic of p.reads) {
      for (const [partition, end] of (await runtime.endOffsets(topic)).entries()) {
        behind += Math.max(0, end - (committed.get(partitionKey(topic, partition)) ?? 0));
      }
    }
    metrics.lag.set({ processor: p.name }, behind);
  }
}

/**
 * Runs the topology's processors side by side in this process until the signal aborts, or with
 * untilIdle until they have caught up with all their input.
 */
export async function runTopology(runtime: Runtime, topology: Topology, opts: RunOptions): Promise<void> {
  await runtime.ensureTopics(topology.topics);
  const metrics = opts.metrics ?? new EngineMetrics();
  const chosen = topology.processors.filter((p) => (opts.only ? opts.only.includes(p.name) : !p.placeholder));
  for (const p of topology.processors) {
    // A worker of a subset (--processors, or run's pipeline process) names only what it runs.
    if (!chosen.includes(p))
      opts.log[opts.only ? 'debug' : 'info'](
        { processor: p.name },
        p.placeholder ? 'placeholder, not started' : 'not selected',
      );
  }
  const tasks = await Promise.all(
    chosen.map((p) =>
      new ProcessorTask(runtime, topology, p, {
        log: opts.log.child({ processor: p.name }),
        metrics,
        batchSize: opts.batchSize?.(p.name),
        commitIntervalMs: opts.commitIntervalMs?.(p.name),
        maxInputs: opts.maxInputs?.(p.name),
      }).open(),
    ),
  );
  opts.health?.running(tasks);
  opts.log.info({ processors: chosen.map((p) => p.name), runtime: runtime.name }, 'running');
  const lag = setInterval(() => {
    updateLag(runtime, chosen, metrics).catch((err) => opts.log.warn({ err }, 'lag not measured'));
  }, opts.lagEveryMs ?? 10_000);
  const maintenance = runtime.maintain
    ? setInterval(() => {
        runtime.maintain?.().then(
          (removed) => removed && opts.log.info({ removed }, 'compaction and retention'),
          (err) => opts.log.warn({ err }, 'compaction failed'),
        );
      }, opts.maintainEveryMs ?? 60_000)
    : null;
  // Stops on the caller's signal, or with untilIdle once the whole graph is idle.
  const idleStop = new AbortController();
  const signal = AbortSignal.any([opts.signal, idleStop.signal]);
  const idle = opts.untilIdle ? stopWhenIdle(runtime, tasks, idleStop, signal, opts) : Promise.resolve();
  try {
    // With nothing to run yet (placeholders only), still serve until asked to stop.
    await Promise.all([...tasks.map((t) => t.run(signal)), untilAborted(signal), idle]);
  } finally {
    opts.health?.stop();
    idleStop.abort();
    if (maintenance) clearInterval(maintenance);
    clearInterval(lag);
    await Promise.all(tasks.map((t) => t.close()));
  }
}

/**
 * Aborts `stop` once every task has been idle, and none has committed anything, for a quiet
 * period: then every processor has polled past the last outputs any other one wrote, so none has
 * anything left to emit (outputs are committed with the inputs that made them).
 */
async function stopWhenIdle(
  runtime: Runtime,
  tasks: readonly ProcessorTask[],
  stop: AbortController,
  signal: AbortSignal,
  opts: RunOptions,
): Promise<void> {
  const committed = () => tasks.reduce((n, t) => n + t.committedInputs, 0);
  let quietSince = performance.now();
  let seen = committed();
  while (!signal.aborted) {
    await new Promise((resolve) => setTimeout(resolve, opts.idleCheckMs ?? 100));
    const now = committed();
    if (!tasks.every((t) => t.idle) || now !== seen) {
      quietSince = performance.now();
      seen = now;
    } else if (performance.now() - quietSince >= (opts.idleQuietMs ?? 1000)) {
      // Idle tasks are not enough on Kafka: a task that owns no partition yet (its group still
      // waits for a killed member's session to end) polls nothing and looks idle.
      if (!(await caughtUp(runtime, tasks, opts))) {
        quietSince = performance.now();
        continue;
      }
      opts.log.info('idle: every processor has read its input to the end');
      stop.abort();
    }
  }
}

/**
 * Whether every processor's group has committed past the last record of each input partition.
 * The offsets after a committed one may hold only transaction markers, which no read returns:
 * so "past the last record" is "nothing left to read from the committed offset". Processors with
 * an input cap (maxInputs) are left out: they stop short on purpose.
 */
async function caughtUp(
  runtime: Runtime,
  tasks: readonly ProcessorTask[],
  opts: RunOptions,
): Promise<boolean> {
  for (const { processor: p } of tasks) {
    if (opts.maxInputs?.(p.name) !== undefined) continue;
    const committed = await runtime.committedOffsets(p.name, p.reads);
    for (const topic of p.reads) {
      for (const [partition, end] of (await runtime.endOffsets(topic)).entries()) {
        const at = committed.get(partitionKey(topic, partition)) ?? 0;
        if (at < end && (await runtime.read(topic, partition, at, 1)).length > 0) return false;
      }
    }
  }
  return true;
}

function untilAborted(signal: AbortSignal): Promise<void> {
  return signal.aborted
    ? Promise.resolve()
    : new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
