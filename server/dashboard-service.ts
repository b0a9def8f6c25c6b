import type { Logger } from 'pino';
import type { Analytics } from '../analytics/clickhouse.js';
import type { Feeder } from '../processors/feeder/feeder.js';
import { pipelineTopology } from '../processors/pipeline.js';
import type { Config } from '../schemas/config.js';
import { loadReference } from '../schemas/reference.js';
import { loadTaxonomy } from '../schemas/taxonomy.js';
import type { EngineMetrics } from '../topology/metrics.js';
import type { Runtime } from '../topology/runtime/types.js';
import { type DashboardServer, startDashboard } from './dashboard.js';
import { DashboardData } from './dashboard-data.js';
import { registerDashboardMetrics } from './dashboard-metrics.js';

/**
 * The dashboard with its sources wired from the config: ClickHouse, the log, the process's metrics
 * registry (where the mix and feeder gauges are added), and the feeder's file when there is one.
 * `standalone`: no pipeline in this process, so the lag gauge is set from the log's offsets.
 */
export async function serveDashboard(
  config: Pick<Config, 'dashboard' | 'sampler' | 'taxonomy' | 'llm'>,
  opts: {
    analytics: Analytics;
    runtime: Runtime | null;
    metrics: EngineMetrics;
    feeder: Feeder | null;
    log: Logger;
    standalone: boolean;
    host?: string;
    port?: number;
    env?: NodeJS.ProcessEnv;
  },
): Promise<DashboardServer> {
  const d = config.dashboard;
  const processors = pipelineTopology().processors.map((p) => ({ name: p.name, reads: p.reads }));
  const data = new DashboardData({
    analytics: opts.analytics,
    reference: loadReference(config.sampler.reference),
    taxonomy: loadTaxonomy(config.taxonomy),
    alpha: config.sampler.alpha,
    usdPerDay: config.llm.budget.usdPerDay,
    runtime: opts.runtime,
    processors,
    metrics: opts.metrics,
    exportLag: opts.standalone,
    feeder: opts.feeder,
  });
  registerDashboardMetrics(opts.metrics.registry, {
    analytics: opts.analytics,
    feeder: opts.feeder,
    runtime: opts.runtime,
  });
  const server = await startDashboard({
    host: opts.host ?? d.host,
    port: opts.port ?? d.port,
    token: (opts.env ?? process.env)[d.tokenEnv] || undefined,
    tokenEnv: d.tokenEnv,
    refreshMs: d.refreshMs,
    windowSeconds: d.windowSeconds,
    data,
    registry: () => opts.metrics.exposed(),
    log: opts.log,
  });
  opts.log.info(
    {
      url: server.url,
      metrics: `${server.url}/metrics`,
      token: server.protected ? d.tokenEnv : 'not needed on loopback',
    },
    'dashboard',
  );
  return server;
}
