import { basename, join } from 'node:path';
import type { Logger } from 'pino';
import { ingestProcessor } from '../processors/ingest.js';
import { pipelineTopology } from '../processors/pipeline.js';
import { Config, loadConfig, type QaWithdrawal } from '../schemas/index.js';
import { EngineMetrics } from '../topology/metrics.js';
import { openRuntime, type RuntimeOptions } from '../topology/runtime/open.js';
import type { Runtime } from '../topology/runtime/types.js';
import { ProcessorTask } from '../topology/task.js';
import type { Topology } from '../topology/topology.js';
import { createLogger } from './log.js';
import { type GlobalOptions, UsageError } from './usage.js';

/** The configured log, reached with the config's connection (TLS, credentials) where it is Kafka. */
export function openLog(config: Config, opts: Omit<RuntimeOptions, 'connection'> = {}): Promise<Runtime> {
  return openRuntime(config.log, { ...opts, connection: config.connection });
}

/** Every record of a topic of the configured log, in partition then offset order, parsed as JSON. */
export async function forEachLogValue(
  config: Config,
  topic: string,
  visit: (value: unknown) => void,
): Promise<void> {
  const runtime = await openLog(config);
  try {
    for (const [partition, end] of (await runtime.endOffsets(topic).catch(() => [])).entries()) {
      for (let from = 0; from < end; ) {
        const records = await runtime.read(topic, partition, from, 1000);
        if (records.length === 0) break;
        for (const r of records) visit(JSON.parse(r.value));
        from = records[records.length - 1]!.offset + 1;
      }
    }
  } finally {
    await runtime.close();
  }
}

/** The QA withdrawn from the dataset (qa.withdrawn): every reader of qa.classified leaves them out. */
export async function withdrawnQaIds(config: Config): Promise<Set<string>> {
  const ids = new Set<string>();
  await forEachLogValue(config, 'qa.withdrawn', (v) => ids.add((v as QaWithdrawal).qaId));
  return ids;
}

/**
 * The config, with --data (BIOALCHEMY_DATA) moving everything the embedded default keeps under
 * ./data: the log, and chdb and the local model where the config leaves them at their defaults.
 */
export function configOf(opts: GlobalOptions): Config {
  const config = withApp(loadConfig(opts.config));
  if (!opts.data) return config;
  const defaults = Config.parse({});
  return {
    ...config,
    log: `file:${opts.data}`,
    clickhouse:
      config.clickhouse === defaults.clickhouse ? `chdb:${join(opts.data, 'chdb')}` : config.clickhouse,
    llm: {
      ...config.llm,
      modelPath:
        config.llm.modelPath === defaults.llm.modelPath
          ? join(opts.data, 'models', basename(defaults.llm.modelPath))
          : config.llm.modelPath,
    },
  };
}

/** On Kafka the config's `app` travels in the log URL, so every command that opens the log uses it. */
function withApp(config: Config): Config {
  if (!config.log.startsWith('kafka://') || /[?&]app=/.test(config.log)) return config;
  return { ...config, log: `${config.log}${config.log.includes('?') ? '&' : '?'}app=${config.app}` };
}

export function loggerOf(opts: GlobalOptions): Logger {
  return createLogger(opts.logLevel);
}

/** The pipeline's topology, checking that a topic named on the command line is one of its topics. */
export function topologyWith(topic: string): Topology {
  const topology = pipelineTopology();
  if (!topology.topics.some((t) => t.name === topic))
    throw new UsageError(`unknown topic "${topic}" (see "bioalchemy topology describe")`);
  return topology;
}

/** How long a command may take to stop after SIGINT or SIGTERM before it exits regardless. */
export const STOP_DEADLINE_MS = 9_000;

/**
 * Aborts on the first SIGINT or SIGTERM, so a command finishes its current step and stops. Stopping
 * is bounded whatever a dependency does (an endpoint that ignores a closed connection, a local
 * generation that runs on): after STOP_DEADLINE_MS, or at a second signal, the process exits 1.
 * That is safe as a kill -9 is: what was not committed is read again at the next start.
 */
export function stopOnSignal(log?: Logger): AbortSignal {
  const stop = new AbortController();
  const onSignal = (signal: string) => {
    if (stop.signal.aborted) {
      log?.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    log?.info({ signal }, 'stopping after the current step');
    stop.abort();
    setTimeout(() => {
      log?.error(
        { signal, afterMs: STOP_DEADLINE_MS },
        'not stopped in time: exiting (uncommitted work is read again at the next start)',
      );
      process.exit(1);
    }, STOP_DEADLINE_MS).unref();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return stop.signal;
}

/** Runs body with an open ingest task on the configured runtime, closing both after. */
export async function withIngestTask<T>(
  opts: GlobalOptions,
  body: (task: ProcessorTask, log: Logger) => Promise<T>,
): Promise<T> {
  const log = loggerOf(opts);
  const topology = pipelineTopology();
  const runtime = await openLog(configOf(opts));
  try {
    await runtime.ensureTopics(topology.topics);
    const task = await new ProcessorTask(runtime, topology, ingestProcessor, {
      log: log.child({ processor: 'ingest' }),
      metrics: new EngineMetrics(),
    }).open();
    try {
      return await body(task, log);
    } finally {
      await task.close();
    }
  } finally {
    await runtime.close();
  }
}
