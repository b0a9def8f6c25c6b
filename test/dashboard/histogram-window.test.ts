import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HistogramWindow } from '../../server/histogram-window.js';

describe('HistogramWindow', () => {
  it('reports the quantiles of what was observed since the previous read, per label', async () => {
    const registry = new Registry();
    const h = new Histogram({
      name: 'x_seconds',
      help: 'x',
      labelNames: ['route'],
      buckets: [0.001, 0.01, 0.1, 1],
      registers: [registry],
    });
    const lease = new HistogramWindow('x_seconds', { route: 'lease' });
    expect(await lease.read(registry)).toEqual({ p50Ms: null, p99Ms: null, count: 0 });
    for (let i = 0; i < 99; i++) h.observe({ route: 'lease' }, 0.0005);
    h.observe({ route: 'lease' }, 0.5);
    h.observe({ route: 'ack' }, 0.5);
    const first = await lease.read(registry);
    expect(first.count).toBe(100);
    expect(first.p50Ms).toBeLessThanOrEqual(1);
    expect(first.p99Ms).toBeLessThanOrEqual(1);
    // The next window holds only what came after: one slow answer.
    h.observe({ route: 'lease' }, 0.05);
    const second = await lease.read(registry);
    expect(second.count).toBe(1);
    expect(second.p50Ms).toBeGreaterThan(10);
    expect(second.p99Ms).toBeLessThanOrEqual(100);
  });
});
