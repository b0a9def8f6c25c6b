import type { Registry } from 'prom-client';

/** p50 and p99 (milliseconds) of what a histogram observed in a window, and how many observations. */
export interface WindowQuantiles {
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  readonly count: number;
}

/**
 * Quantiles of a prom-client histogram (in seconds) over the window since the previous call: the
 * bucket counts are cumulative since the process started, so each call keeps them and reports the
 * difference. A quantile is the upper bound of the bucket it falls in, interpolated linearly
 * inside it, as Prometheus' histogram_quantile does.
 */
export class HistogramWindow {
  private previous = new Map<string, number>();

  constructor(
    private readonly name: string,
    private readonly match: Record<string, string> = {},
  ) {}

  async read(registry: Registry | undefined): Promise<WindowQuantiles> {
    const metric = registry?.getSingleMetric(this.name);
    const now = new Map<string, number>();
    if (metric) {
      for (const v of (await metric.get()).values) {
        if ((v as { metricName?: string }).metricName !== `${this.name}_bucket`) continue;
        if (Object.entries(this.match).some(([k, want]) => v.labels[k] !== want)) continue;
        // Several processes (worker labels) add up.
        const le = String(v.labels.le);
        now.set(le, (now.get(le) ?? 0) + v.value);
      }
    }
    const window = [...now]
      .map(([le, n]) => ({ le: le === '+Inf' ? Infinity : Number(le), n: n - (this.previous.get(le) ?? 0) }))
      .sort((a, b) => a.le - b.le);
    this.previous = now;
    const count = window.at(-1)?.n ?? 0;
    return { p50Ms: quantile(window, 0.5, count), p99Ms: quantile(window, 0.99, count), count };
  }
}

function quantile(buckets: readonly { le: number; n: number }[], q: number, count: number): number | null {
  if (count <= 0) return null;
  const rank = q * count;
  let below = 0;
  let lower = 0;
  for (const { le, n } of buckets) {
    if (n >= rank) {
      // Past the last finite bound, the last finite bound is all a histogram can say.
      if (le === Infinity) return lower * 1000;
      return (lower + ((le - lower) * (rank - below)) / Math.max(1, n - below)) * 1000;
    }
    below = n;
    lower = le;
  }
  return lower * 1000;
}
