import { Gauge, type Registry } from 'prom-client';
import type { Analytics } from '../analytics/clickhouse.js';
import { latestMixState } from '../analytics/dashboard-queries.js';
import type { Feeder } from '../processors/feeder/feeder.js';
import { MixState } from '../schemas/mix-state.js';

// Gauges read at scrape time, next to the engine's and the LLM layer's metrics in the one registry
// the process serves: the latest mix's drift (for the drift alert) and the feeder's leases.

/** Registers the mix and feeder gauges in `registry`; a source that is absent exports nothing. */
export function registerDashboardMetrics(
  registry: Registry,
  sources: { analytics: Analytics; feeder?: Feeder | null },
): void {
  let cached: { at: number; mix: Promise<MixState | null> } | null = null;
  // One query per scrape for all the mix gauges.
  const mix = () => {
    if (!cached || Date.now() - cached.at > 1000) {
      cached = {
        at: Date.now(),
        mix: latestMixState(sources.analytics)
          .then((s) => (s === null ? null : MixState.parse(JSON.parse(s))))
          .catch(() => null),
      };
    }
    return cached.mix;
  };
  const mixGauge = (name: string, help: string, value: (m: MixState) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      async collect() {
        const m = await mix();
        this.reset();
        if (m) this.set(value(m));
      },
    });
  mixGauge(
    'bioalchemy_mix_version',
    'Version of the latest training mix the sampler published',
    (m) => m.version,
  );
  mixGauge('bioalchemy_mix_alpha', 'The smoothing exponent α of the latest mix', (m) => m.alpha);
  mixGauge(
    'bioalchemy_mix_tvd_reference',
    "Total variation distance of the dataset's topic distribution to the reference (latest mix)",
    (m) => m.metrics.tvdReference,
  );
  mixGauge(
    'bioalchemy_mix_tvd_target',
    'Total variation distance of the selected mix to its α-smoothed target',
    (m) => m.metrics.tvdTarget,
  );
  mixGauge(
    'bioalchemy_mix_js_target',
    'Jensen-Shannon distance (base 2) of the selected mix to its target',
    (m) => m.metrics.jsTarget,
  );
  mixGauge('bioalchemy_mix_size', 'Selected copies in the latest mix', (m) => m.metrics.size);
  mixGauge(
    'bioalchemy_mix_starving_topics',
    'Reference topics with too few items to serve',
    (m) => m.starving.length,
  );

  const feeder = sources.feeder;
  if (!feeder) return;
  const runs = () => feeder.runNames().map((run) => feeder.runStatus(run));
  new Gauge({
    name: 'bioalchemy_feeder_batches',
    help: 'Batches of a run by state: ready, leased, acked, redelivered (leases that were a second or later attempt)',
    labelNames: ['run', 'state'],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of runs())
        for (const [state, n] of Object.entries(r.batches)) this.set({ run: r.run, state }, n);
    },
  });
  new Gauge({
    name: 'bioalchemy_feeder_rank_batches',
    help: 'Batches leased (held now) and acked by one rank of a run',
    labelNames: ['run', 'rank', 'state'],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of runs())
        for (const k of r.ranks) {
          this.set({ run: r.run, rank: String(k.rank), state: 'leased' }, k.leased);
          this.set({ run: r.run, rank: String(k.rank), state: 'acked' }, k.acked);
        }
    },
  });
  new Gauge({
    name: 'bioalchemy_feeder_acked_items',
    help: 'Items acked over the whole run',
    labelNames: ['run'],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of runs()) this.set({ run: r.run }, r.ackedItems);
    },
  });
}
