import { createServer, type Server } from 'node:http';
import type { Health } from '../topology/health.js';
import type { EngineMetrics } from '../topology/metrics.js';

/** The probes' paths: the Helm chart names them, the image test hits them (test/deploy/). */
export const PROBE_PATHS = { live: '/livez', ready: '/readyz', metrics: '/metrics' } as const;

/**
 * /metrics (Prometheus), and the probes of topology/health.ts: /livez answers 200 while the process
 * does (never a dependency's state), /readyz 200 when every task holds its assignment, else 503
 * with the reasons. Paths the Helm chart's probes and the image test name.
 */
export async function serveMetrics(
  metrics: EngineMetrics,
  health: Health,
  port: number,
  host = '127.0.0.1',
): Promise<Server> {
  const json = { 'content-type': 'application/json' };
  const server = createServer(async (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path === PROBE_PATHS.live) return void res.writeHead(200, json).end('{"live":true}');
    if (path === PROBE_PATHS.ready) {
      const r = health.readiness();
      return void res.writeHead(r.ready ? 200 : 503, json).end(JSON.stringify(r));
    }
    if (path !== PROBE_PATHS.metrics) return void res.writeHead(404).end();
    const registry = await metrics.exposed();
    res.writeHead(200, { 'content-type': registry.contentType }).end(await registry.metrics());
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, host, resolve));
  return server;
}
