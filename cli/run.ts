import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { type Analytics, openClickHouse } from '../analytics/clickhouse.js';
import { preflightAtStart } from '../llm/check.js';
import { type EndpointFault, EndpointMemory, type Llm, LlmCallLog, LogJournal } from '../llm/index.js';
import { ingestProcessor } from '../processors/ingest.js';
import {
  CLICKHOUSE_PROCESSORS,
  LLM_PROCESSORS,
  PIPELINE_PROCESSORS,
  pipelineTopology,
} from '../processors/pipeline.js';
import { configuredPollers, pollAll } from '../processors/poll.js';
import { loadReference } from '../schemas/reference.js';
import { loadTaxonomy } from '../schemas/taxonomy.js';
import type { DashboardServer } from '../server/dashboard.js';
import { serveDashboard } from '../server/dashboard-service.js';
import { type Feeding, startFeeding } from '../server/index.js';
import { serveMetrics } from '../server/probes.js';
import { Health } from '../topology/health.js';
import { EngineMetrics } from '../topology/metrics.js';
import { runTopology } from '../topology/runner.js';
import { ProcessorTask } from '../topology/task.js';
import { configOf, loggerOf, openLog, stopOnSignal } from './context.js';
import { openLlm } from './llm.js';
import { type PipelineProcess, serveParent, startPipelineProcess } from './pipeline-process.js';
import { LlmTally, runSummary } from './summary.js';
import { type GlobalOptions, UsageError } from './usage.js';

/** How long `run` waits for a ClickHouse that refuses connections before it gives up. */
const CLICKHOUSE_WAIT_MS = 60_000;

export interface RunOptions extends GlobalOptions {
  metricsPort?: number;
  metricsHost?: string;
  untilIdle?: boolean;
  maxArticles?: number;
  host?: string;
  port?: number;
  dashboard?: boolean;
  dashboardHost?: string;
  dashboardPort?: number;
  processors?: string[];
  workerId?: string;
  /** This process is the LLM stages' process of a `run` (cli/pipeline-process.ts): it polls, and reports to its parent. */
  pipelineChild?: boolean;
}

export async function run(opts: RunOptions): Promise<void> {
  const started = performance.now();
  const config = configOf(opts);
  const worker = opts.workerId ?? `${hostname()}-${process.pid}`;
  const log = loggerOf(opts).child({ worker });
  const metrics = new EngineMetrics({ defaults: true });
  metrics.registry.setDefaultLabels({ worker });
  // First: a pipeline process whose parent is already gone must exit before it touches the log.
  const stopReporting = opts.pipelineChild ? serveParent({ metrics, log }) : () => {};
  const port = opts.metricsPort ?? config.metricsPort;
  const runtime = await openLog(config, { worker, log });
  const known = pipelineTopology().processors.map((p) => p.name);
  const unknown = (opts.processors ?? []).filter((n) => !known.includes(n));
  if (unknown.length) throw new UsageError(`unknown processor "${unknown[0]}" (one of: ${known.join(', ')})`);
  // A worker of a subset serves the feeder API and the dashboard only if it runs the feeder.
  const serves = !opts.processors || opts.processors.includes('feeder');
  // Serving for as long as it runs, `run` leaves the pipeline's stages to a process of their own, so
  // that their CPU work never delays a lease or an ack. --until-idle is a batch job: one process.
  const splits = !opts.processors && !opts.untilIdle;
  const only = splits ? known.filter((n) => !PIPELINE_PROCESSORS.includes(n)) : opts.processors;
  const runsLlm = (only ?? known).some((n) => LLM_PROCESSORS.includes(n));
  // Stops on SIGINT or SIGTERM, and when the pipeline process fails.
  const failed = new AbortController();
  const signal = AbortSignal.any([stopOnSignal(log), failed.signal]);
  let pipelineError: Error | null = null;
  // A confirmed endpoint fault (a wrong key, model or URL): a batch run stops on it, non-zero; a
  // service keeps probing (the fault is logged once by the LLM layer) and resumes once it clears.
  let endpointFault: EndpointFault | null = null;
  const health = new Health();
  signal.addEventListener('abort', () => health.stop(), { once: true });
  const metricsHost = opts.metricsHost ?? config.metricsHost;
  const server = port === undefined ? null : await serveMetrics(metrics, health, port, metricsHost);
  if (server) log.info({ host: metricsHost, port }, 'metrics on /metrics, probes on /livez and /readyz');
  let analytics: Analytics | null = null;
  let llm: Llm | null = null;
  let feeding: Feeding | null = null;
  let dashboard: DashboardServer | null = null;
  // Cleared in the outer finally too: a server that refuses to start must not keep the process alive.
  let flushCalls: NodeJS.Timeout | undefined;
  let pipeline: PipelineProcess | null = null;
  try {
    // The topology's topics first: the journal topic must exist before it is read.
    await runtime.ensureTopics(pipelineTopology().topics);
    if (splits) {
      pipeline = startPipelineProcess({ args: pipelineArgs(opts, worker), metrics, log });
      const started = pipeline;
      let pipelineExited = false;
      void started.exited.finally(() => {
        pipelineExited = true;
      });
      health.require(() => (pipelineExited ? 'the pipeline process exited' : null));
      signal.addEventListener('abort', () => started.stop(), { once: true });
    }
    const pipelineDone = (pipeline?.exited ?? Promise.resolve()).catch((err: Error) => {
      pipelineError = err;
      failed.abort();
    });
    // ClickHouse only where a processor uses it: workers of the LLM stages account their calls
    // through the log (llm.calls), so N of them on one machine share no chdb folder.
    if ((only ?? known).some((n) => CLICKHOUSE_PROCESSORS.includes(n)))
      // A service started beside its ClickHouse, or meeting it mid-restart, waits for it a while.
      analytics = await openClickHouse(config.clickhouse, {
        connection: config.connection.clickhouse,
        waitMs: CLICKHOUSE_WAIT_MS,
        onWait: (err, retryInMs) => log.warn({ err: err.message, retryInMs }, 'ClickHouse not answering yet'),
      });
    const calls = new LlmCallLog(runtime);
    const tally = new LlmTally();
    // Compaction first: what settled since the last pass is not read again below.
    await runtime.maintain?.();
    const journal = !runsLlm
      ? null
      : await LogJournal.open(runtime, {
          onRestore: ({ partition, replies, unreadable }) => {
            log.info({ partition, replies }, 'llm.journal: pending replies restored');
            if (unreadable)
              log.warn(
                { partition, records: unreadable },
                'llm.journal: records that are no reply skipped (their calls are made again)',
              );
          },
        });
    if (journal) {
      const memory = await EndpointMemory.open(runtime, {
        onRead: (read) => {
          if (read.unreadable)
            log.warn(
              read,
              'llm.endpoints: records that are no fact skipped (what they said is learned again)',
            );
        },
        onWriteError: (err) =>
          log.warn({ err }, 'llm.endpoints: a fact learned not kept (learned again after a restart)'),
      });
      llm = openLlm(config, {
        memory,
        registry: metrics.registry,
        log: log.child({ layer: 'llm' }),
        journal,
        onCall: (call) => {
          tally.add(call);
          calls.add(call);
        },
        onFault: (fault) => {
          if (!fault || !opts.untilIdle) return;
          endpointFault = fault;
          failed.abort();
        },
      });
      const stopping = llm;
      // Stopping gives up the calls waiting or in flight at once: their inputs stay uncommitted.
      if (signal.aborted) stopping.stop();
      else signal.addEventListener('abort', () => stopping.stop(), { once: true });
      tally.requests = llm.requests;
      tally.concurrency = () => stopping.concurrency();
      // Said at start, unpaid: a key refused, a stage's model not served (GET /models). The calls
      // themselves decide whether the stage pauses; this only says it before the first one.
      void preflightAtStart(config.llm).then((found) => {
        // One line per fix, naming the stages it stops.
        const byFix = new Map<string, typeof found>();
        for (const f of found) byFix.set(f.fix, [...(byFix.get(f.fix) ?? []), f]);
        for (const [fix, all] of byFix) {
          const stages = all.flatMap((f) => f.stage ?? []);
          const { configKey, message } = all[0]!;
          if (stages.length === 0)
            log.error(
              { configKey },
              `LLM endpoint cannot run: fix ${configKey}: ${fix}. The server said: ${message}`,
            );
          // A model not listed may still be served: a server of one model (llama-cpp-python,
          // llama-server) answers to any name. Its first call decides (a 404 pauses the stage).
          else
            log.warn(
              { stages, configKey },
              `LLM stage(s) ${stages.join(', ')} may not run: ${message}. If the endpoint refuses them, fix ${configKey}: ${fix}`,
            );
        }
      });
      flushCalls = setInterval(
        () => void calls.flush().catch((err) => log.warn({ err }, 'llm calls not recorded yet')),
        // Under the idle check's quiet second: a run --until-idle sinks its last calls before it stops.
        500,
      );
    }
    const taxonomy = loadTaxonomy(config.taxonomy);
    // The feeder's file and HTTP API (not served by --until-idle unless --host or --port asks).
    if (serves)
      feeding = await startFeeding(config, {
        ...(analytics ? { analytics } : {}),
        log,
        registry: metrics.registry,
        serve: !opts.untilIdle || opts.host !== undefined || opts.port !== undefined,
        ...(opts.host === undefined ? {} : { host: opts.host }),
        ...(opts.port === undefined ? {} : { port: opts.port }),
      });
    // The dashboard and /metrics on a port of their own (not served by --until-idle unless asked).
    if (
      feeding &&
      analytics &&
      opts.dashboard !== false &&
      (!opts.untilIdle || opts.dashboardHost !== undefined || opts.dashboardPort !== undefined)
    ) {
      dashboard = await serveDashboard(config, {
        analytics,
        runtime,
        metrics,
        feeder: feeding.feeder,
        log,
        standalone: false,
        ...(opts.dashboardHost === undefined ? {} : { host: opts.dashboardHost }),
        ...(opts.dashboardPort === undefined ? {} : { port: opts.dashboardPort }),
      });
    }
    const topology = pipelineTopology({
      ...(feeding ? { feeder: feeding.processor } : {}),
      ...(llm ? { stages: { llm, taxonomy, config, registry: metrics.registry } } : {}),
      ...(analytics
        ? {
            counts: {
              analytics,
              sampler: {
                config: config.sampler,
                reference: loadReference(config.sampler.reference),
                taxonomy: { name: taxonomy.name, meshYear: taxonomy.meshYear },
              },
            },
          }
        : {}),
    });
    const dlqFrom = await runtime.endOffsets('dlq');
    const rejectedFrom = await runtime.endOffsets('qa.rejected');
    // Pollers feed "articles" through their own ingest task, next to the processors.
    const polling =
      config.sources.length && !opts.untilIdle && (!only || opts.pipelineChild)
        ? new ProcessorTask(runtime, topology, ingestProcessor, {
            log: log.child({ processor: 'ingest' }),
            metrics,
          })
            .open()
            .then(async (task) => {
              await pollAll(task, configuredPollers(config.sources, log), { signal, log }).finally(() =>
                task.close(),
              );
            })
        : Promise.resolve();
    const progress = setInterval(() => void logProgress(metrics, log), opts.untilIdle ? 5000 : 30_000);
    // kill -HUP re-reads the config's llm.budget: raising the cap resumes stages paused at it.
    const reloadBudget = () => {
      try {
        const { budget } = configOf(opts).llm;
        llm?.setBudget(budget);
        pipeline?.reloadBudget();
        log.info({ budget }, 'llm budget re-read from the config');
      } catch (err) {
        log.error({ err }, 'config not re-read');
      }
    };
    process.on('SIGHUP', reloadBudget);
    try {
      await Promise.all([
        runTopology(runtime, topology, {
          log,
          metrics,
          signal,
          health,
          untilIdle: opts.untilIdle ?? false,
          ...(only ? { only } : {}),
          batchSize: (p) => config.processors[p]?.batchSize,
          commitIntervalMs: (p) => config.processors[p]?.commitIntervalMs,
          maxInputs: (p) => (p === 'extract' ? opts.maxArticles : undefined),
        }),
        polling,
        pipelineDone,
      ]);
    } finally {
      clearInterval(progress);
      process.off('SIGHUP', reloadBudget);
      clearInterval(flushCalls);
      await calls.flush().catch((err) => log.warn({ err }, 'llm calls not recorded'));
    }
    if (opts.untilIdle) {
      const processors = topology.processors.filter((p) => !p.placeholder).map((p) => p.name);
      const seconds = (performance.now() - started) / 1000;
      process.stdout.write(
        `${await runSummary({ runtime, metrics, processors, llm: tally, dlqFrom, rejectedFrom, seconds })}\n`,
      );
    }
  } finally {
    clearInterval(flushCalls);
    stopReporting();
    pipeline?.stop();
    await pipeline?.exited.catch(() => {});
    server?.close();
    await dashboard?.close();
    await feeding?.close();
    await llm?.close();
    await analytics?.close();
    await runtime.close();
  }
  if (pipelineError) throw pipelineError;
  if (endpointFault) throw new Error(faultLine(endpointFault));
  log.info('stopped');
}

/** The one line a run that stopped on an endpoint fault ends with: the key to fix, the server's words. */
export function faultLine(f: EndpointFault): string {
  return (
    `stopped: the LLM endpoint refuses every ${f.stage} request; fix ${f.configKey}: ${f.fix}. ` +
    `The server said${f.status ? ` (${f.status})` : ''}: ${f.message.replace(/\.$/, '')}. Nothing was dead-lettered: the inputs wait for a run with the config fixed`
  );
}

/** The pipeline process's arguments: its processors, with this run's options that concern them. */
function pipelineArgs(opts: RunOptions, worker: string): string[] {
  return [
    '--processors',
    PIPELINE_PROCESSORS.join(','),
    '--no-dashboard',
    '--worker-id',
    `${worker}-pipeline`,
    ...(opts.config ? ['--config', opts.config] : []),
    ...(opts.data ? ['--data', opts.data] : []),
    ...(opts.logLevel ? ['--log-level', opts.logLevel] : []),
    ...(opts.maxArticles === undefined ? [] : ['--max-articles', String(opts.maxArticles)]),
  ];
}

/** One line every few seconds while --until-idle works: records committed per processor and their lag. */
async function logProgress(metrics: EngineMetrics, log: Logger): Promise<void> {
  const committed = Object.fromEntries(
    (await metrics.recordsIn.get()).values.map((v) => [v.labels.processor, v.value]),
  );
  const lag = Object.fromEntries((await metrics.lag.get()).values.map((v) => [v.labels.processor, v.value]));
  log.info({ committed, lag }, 'progress');
}
