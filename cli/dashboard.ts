import { existsSync } from 'node:fs';
import { Command } from 'commander';
import { type Analytics, openClickHouse } from '../analytics/clickhouse.js';
import { Feeder } from '../processors/feeder/feeder.js';
import type { DashboardServer } from '../server/dashboard.js';
import { serveDashboard } from '../server/dashboard-service.js';
import { feederPath } from '../server/index.js';
import { EngineMetrics } from '../topology/metrics.js';
import { openRuntime } from '../topology/runtime/open.js';
import type { Runtime } from '../topology/runtime/types.js';
import { configOf, type GlobalOptions, loggerOf, stopOnSignal, wholeNumber } from './context.js';

interface DashboardOptions extends GlobalOptions {
  host?: string;
  port?: number;
  clickhouse?: string;
}

export function dashboardCommand(): Command {
  return new Command('dashboard')
    .description(
      'serve the dashboard and /metrics alone, over the data folder or a ClickHouse server, until Ctrl-C',
    )
    .option(
      '--host <host>',
      'address (default: dashboard.host, 127.0.0.1; any other needs the token in dashboard.tokenEnv)',
    )
    .option('--port <port>', 'port, 0 for any free one (default: dashboard.port, 8788)', wholeNumber)
    .option('--clickhouse <url>', "ClickHouse to read (default: the config's clickhouse, chdb:./data/chdb)")
    .addHelpText(
      'after',
      `
Beside a running pipeline, read a ClickHouse server it writes to (chdb's folder is held by the
process that opened it): the log's offsets and dead letters come from the config's log.

Examples:
  $ bioalchemy dashboard                                   # http://127.0.0.1:8788, the embedded ./data
  $ bioalchemy dashboard --clickhouse http://default@127.0.0.1:8123/default --config prod.json
  $ BIOALCHEMY_DASHBOARD_TOKEN=s3cret bioalchemy dashboard --host 0.0.0.0   # open http://<host>:8788/?token=s3cret`,
    )
    .action((_opts, cmd: Command) => dashboard(cmd.optsWithGlobals<DashboardOptions>()));
}

async function dashboard(opts: DashboardOptions): Promise<void> {
  const config = configOf(opts);
  const log = loggerOf(opts);
  const signal = stopOnSignal(log);
  const metrics = new EngineMetrics({ defaults: true });
  let analytics: Analytics | null = null;
  let runtime: Runtime | null = null;
  let feeder: Feeder | null = null;
  let server: DashboardServer | null = null;
  try {
    analytics = await openClickHouse(opts.clickhouse ?? config.clickhouse);
    runtime = await openRuntime(config.log).catch((err) => {
      log.warn({ err, log: config.log }, 'the log does not open: no processor or dead-letter panels');
      return null;
    });
    const path = feederPath(config);
    feeder = existsSync(path) ? Feeder.open(path, config.feeder) : null;
    server = await serveDashboard(config, {
      analytics,
      runtime,
      metrics,
      feeder,
      log,
      standalone: true,
      ...(opts.host === undefined ? {} : { host: opts.host }),
      ...(opts.port === undefined ? {} : { port: opts.port }),
    });
    process.stdout.write(`${server.url}\n`);
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      else signal.addEventListener('abort', () => resolve(), { once: true });
    });
  } finally {
    await server?.close();
    feeder?.close();
    await runtime?.close();
    await analytics?.close();
  }
  log.info('stopped');
}
