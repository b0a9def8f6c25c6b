import { createServer } from 'node:http';
import { Command, Option } from 'commander';
import { ingestProcessor } from '../processors/ingest.js';
import { pipelineTopology } from '../processors/pipeline.js';
import { configuredPollers, pollAll } from '../processors/poll.js';
import { EngineMetrics } from '../topology/metrics.js';
import { runTopology } from '../topology/runner.js';
import { openRuntime } from '../topology/runtime/open.js';
import { ProcessorTask } from '../topology/task.js';
import { configOf, type GlobalOptions, loggerOf, stopOnSignal, wholeNumber } from './context.js';

interface RunOptions extends GlobalOptions {
  metricsPort?: number;
}

export function runCommand(): Command {
  return new Command('run')
    .description("run the pipeline's processors (and the config's pollers) until Ctrl-C")
    .addOption(
      new Option('--metrics-port <port>', 'serve Prometheus metrics on 127.0.0.1:<port>/metrics')
        .env('BIOALCHEMY_METRICS_PORT')
        .argParser(wholeNumber),
    )
    .addHelpText(
      'after',
      `
Examples:
  $ bioalchemy run                                   # the embedded default, log in ./data
  $ bioalchemy run --metrics-port 9464 --config prod.json`,
    )
    .action((_opts, cmd: Command) => run(cmd.optsWithGlobals<RunOptions>()));
}

async function run(opts: RunOptions): Promise<void> {
  const config = configOf(opts);
  const log = loggerOf(opts);
  const metrics = new EngineMetrics({ defaults: true });
  const port = opts.metricsPort ?? config.metricsPort;
  const runtime = await openRuntime(config.log);
  const signal = stopOnSignal(log);
  const server =
    port === undefined
      ? null
      : createServer(async (req, res) => {
          if (req.url !== '/metrics') return void res.writeHead(404).end();
          res
            .writeHead(200, { 'content-type': metrics.registry.contentType })
            .end(await metrics.registry.metrics());
        });
  if (server) {
    await new Promise<void>((resolve, reject) =>
      server.once('error', reject).listen(port, '127.0.0.1', resolve),
    );
    log.info({ port }, 'metrics on /metrics');
  }
  try {
    const topology = pipelineTopology();
    await runtime.ensureTopics(topology.topics);
    // Pollers feed "articles" through their own ingest task, next to the processors.
    const polling = config.sources.length
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
    await Promise.all([
      runTopology(runtime, topology, {
        log,
        metrics,
        signal,
        batchSize: (p) => config.processors[p]?.batchSize,
        commitIntervalMs: (p) => config.processors[p]?.commitIntervalMs,
      }),
      polling,
    ]);
  } finally {
    server?.close();
    await runtime.close();
  }
  log.info('stopped');
}
