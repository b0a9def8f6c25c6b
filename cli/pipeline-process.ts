import { type ChildProcess, fork } from 'node:child_process';
import { getPriority, setPriority } from 'node:os';
import type { Logger } from 'pino';
import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import type { EngineMetrics } from '../topology/metrics.js';

// `bioalchemy run` serving the feeder runs the LLM stages (extract, grade, classify) and the
// pollers in a child process of its own: their CPU work (parsing replies, checks, near-duplicates)
// held the one event loop for tens of milliseconds at a time, and every GPU rank waited behind it
// for its lease or ack (issue 31). The child is this same command with --processors, as a worker
// on Kafka is; both processes share the log (the embedded SQLite file takes several processes, as
// Kafka takes several workers) and exactly-once stays the log's, per step. The parent keeps the
// feeder, the dashboard and the ClickHouse processors: chdb lets one process use its folder.

/** What the pipeline child posts to the parent: its metrics, every second, for /metrics and the dashboard. */
export interface PipelineMessage {
  readonly metrics: MetricObjectWithValues<MetricValue<string>>[];
}

/**
 * The pipeline process's nice value: with every core busy (the LLM stages, a local model, other
 * work on the machine), the kernel runs the feeder's process first, and the pipeline takes what is
 * left, which on an idle machine is everything. At the same priority the two shared the cores
 * evenly, and a lease still waited its turn behind the pipeline (BENCHMARKS.md, feeder under load).
 */
const PIPELINE_NICE = 10;

/** How often the child posts its metrics. */
const METRICS_EVERY_MS = 1000;

export interface PipelineProcess {
  readonly pid: number;
  /** Resolves when the child has exited after stop(); rejects when it exits by itself or fails. */
  readonly exited: Promise<void>;
  stop(): void;
  /** SIGHUP: the child re-reads the config's llm.budget. */
  reloadBudget(): void;
}

/**
 * Starts `bioalchemy run --processors <stages> --pipeline-child` (the command that started this
 * process, argv[1], with its node options), its logs on this process's stdout and stderr.
 */
export function startPipelineProcess(opts: {
  readonly args: readonly string[];
  readonly metrics: EngineMetrics;
  readonly log: Logger;
}): PipelineProcess {
  const bin = process.argv[1];
  if (!bin) throw new Error('the pipeline process needs the command that started this one (argv[1])');
  // The parent serves /metrics for both: the child must not try the same port.
  const { BIOALCHEMY_METRICS_PORT: _, ...env } = process.env;
  const child: ChildProcess = fork(bin, ['run', ...opts.args, '--pipeline-child'], {
    env,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pid = child.pid ?? -1;
  let nice: number | null = null;
  try {
    setPriority(pid, Math.min(19, getPriority() + PIPELINE_NICE));
    nice = getPriority(pid);
  } catch (err) {
    opts.log.warn({ err }, 'the pipeline process runs at the same CPU priority as the feeder');
  }
  opts.log.info({ pid, nice }, 'pipeline process started (extract, grade, dedup, classify)');
  child.on('message', (m: PipelineMessage) => {
    if (m && Array.isArray(m.metrics)) opts.metrics.receive(`pipeline-${pid}`, m.metrics);
  });
  let stopping = false;
  const exited = new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      opts.metrics.forget(`pipeline-${pid}`);
      if (stopping && (code === 0 || signal === 'SIGTERM')) resolve();
      else reject(new Error(`the pipeline process (pid ${pid}) exited with ${signal ?? `code ${code}`}`));
    });
  });
  return {
    pid,
    exited,
    stop() {
      stopping = true;
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    },
    reloadBudget() {
      child.kill('SIGHUP');
    },
  };
}

/**
 * The child's side: posts its metrics to the parent, and exits at once when the parent is gone
 * (killed: nothing else would stop this process, and a run started again would find it still
 * working). Exiting mid-work is what a kill -9 does, which every step survives.
 */
export function serveParent(opts: { readonly metrics: EngineMetrics; readonly log: Logger }): () => void {
  const send = process.send?.bind(process);
  if (!send) throw new Error('--pipeline-child is for the process `run` starts (it needs the IPC channel)');
  // The channel alone must not keep this process alive once its processors have stopped.
  process.channel?.unref();
  const orphaned = () => {
    opts.log.error('the run that started this pipeline process is gone: exiting');
    process.exit(1);
  };
  // A parent killed while this process was still loading is gone before the listener: the event
  // came and went, and only `connected` tells.
  if (!process.connected) orphaned();
  process.once('disconnect', orphaned);
  // A SIGHUP the parent forwards while this process still starts must not end it (the default
  // action): the budget is read at start anyway, and run's own handler takes the later ones.
  process.on('SIGHUP', () => {});
  const timer = setInterval(() => {
    opts.metrics.registry.getMetricsAsJSON().then(
      (metrics) => process.connected && send({ metrics } satisfies PipelineMessage),
      (err) => opts.log.warn({ err }, 'metrics not gathered'),
    );
  }, METRICS_EVERY_MS).unref();
  return () => clearInterval(timer);
}
