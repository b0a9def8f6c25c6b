import { existsSync } from 'node:fs';
import { type Analytics, openClickHouse } from '../analytics/clickhouse.js';
import { Feeder } from '../processors/feeder/feeder.js';
import type { DashboardServer } from '../server/dashboard.js';
import { serveDashboard } from '../server/dashboard-service.js';
import { feederPath } from '../server/index.js';
import { EngineMetrics } from '../topology/metrics.js';
import type { Runtime } from '../topology/runtime/types.js';
import { configOf, loggerOf, openLog, stopOnSignal } from './context.js';
import type { GlobalOptions } from './usage.js';

export interface DashboardOptions extends GlobalOptions {
  host?: string;
  port?: number;
  clickhouse?: string;
}

export async function dashboard(opts: DashboardOptions): Promise<void> {
  const config = configOf(opts);
  const log = loggerOf(opts);
  const signal = stopOnSignal(log);
  const metrics = new EngineMetrics({ defaults: true });
  let analytics: Analytics | null = null;
  let runtime: Runtime | null = null;
  let feeder: Feeder | null = null;
  let server: DashboardServer | null = null;
  try {
    analytics = await openClickHouse(opts.clickhouse ?? config.clickhouse, {
      connection: config.connection.clickhouse,
    });
    runtime = await openLog(config).catch((err) => {
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
