import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { serveMetrics } from '../../server/probes.js';
import { Health } from '../../topology/health.js';
import { EngineMetrics } from '../../topology/metrics.js';

// The probes the Helm chart and the image test name: /livez and /readyz beside /metrics.
describe('run --metrics-port: /livez, /readyz, /metrics', () => {
  let close: (() => void) | null = null;
  afterEach(() => close?.());

  async function serve(health: Health) {
    const server = await serveMetrics(new EngineMetrics(), health, 0, '127.0.0.1');
    close = () => server.close();
    const { port } = server.address() as AddressInfo;
    return async (path: string) => {
      const res = await fetch(`http://127.0.0.1:${port}${path}`);
      return { status: res.status, body: await res.text() };
    };
  }

  it('readiness follows the tasks: none yet, one outside its group, all in, stopping', async () => {
    const health = new Health();
    const get = await serve(health);
    let r = await get('/readyz');
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body).waiting).toEqual(['processors not started']);

    const tasks = [
      { name: 'extract', inGroup: true },
      { name: 'grade', inGroup: false },
    ];
    health.running(tasks);
    r = await get('/readyz');
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body).waiting).toEqual(['grade: no group assignment yet']);

    tasks[1]!.inGroup = true;
    r = await get('/readyz');
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ ready: true, waiting: [] });

    let childGone = false;
    health.require(() => (childGone ? 'the pipeline process exited' : null));
    expect((await get('/readyz')).status).toBe(200);
    childGone = true;
    expect(JSON.parse((await get('/readyz')).body).waiting).toEqual(['the pipeline process exited']);
    childGone = false;

    health.stop();
    r = await get('/readyz');
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body).waiting).toEqual(['stopping']);
  });

  it('liveness never depends on readiness; /metrics is Prometheus text; anything else 404', async () => {
    const health = new Health();
    health.stop();
    const get = await serve(health);
    const live = await get('/livez');
    expect(live.status).toBe(200);
    expect(JSON.parse(live.body)).toEqual({ live: true });
    const metrics = await get('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.body).toContain('# HELP');
    expect((await get('/healthz/x')).status).toBe(404);
  });
});
