import { Gauge, type Registry } from 'prom-client';
import type { Analytics } from '../analytics/clickhouse.js';
import { latestMixState } from '../analytics/dashboard-queries.js';
import type { Feeder } from '../processors/feeder/feeder.js';
import { readPollerStates } from '../processors/poll.js';
import { MixState } from '../schemas/mix-state.js';
import type { Runtime } from '../topology/runtime/types.js';
import { type PollerView, pollerViews } from './dashboard-data.js';

// Gauges read at scrape time, next to the engine's and the LLM layer's metrics in the one registry
// the process serves: the latest mix's drift (for the drift alert), the feeder's leases, and the
// literature pollers' stalls and pauses (for the stalled-poller alert).

/** Registers the mix and feeder gauges in `registry`; a source that is absent exports nothing. */
export function registerDashboardMetrics(
  registry: Registry,
  sources: { analytics: Analytics; feeder?: Feeder | null; runtime?: Runtime | null },
): void {
  registerPollerMetrics(registry, sources.runtime ?? null);
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

/**
 * Each poller's committed state, read from the log at scrape time (any process with the log can
 * serve them). The alert threshold is the one the poller wrote with its stall, so the alert rule
 * compares two series and the time stays configurable per poller (stallAlertAfterMs).
 */
function registerPollerMetrics(registry: Registry, runtime: Runtime | null): void {
  let cached: { at: number; views: Promise<PollerView[]> } | null = null;
  const views = () => {
    if (!runtime) return Promise.resolve([]);
    if (!cached || Date.now() - cached.at > 1000) {
      cached = {
        at: Date.now(),
        views: readPollerStates(runtime)
          .then((states) => pollerViews(states, new Date()))
          .catch(() => []),
      };
    }
    return cached.views;
  };
  const pollerGauge = (name: string, help: string, value: (v: PollerView) => number | null) =>
    new Gauge({
      name,
      help,
      labelNames: ['poller', 'key'],
      registers: [registry],
      async collect() {
        const all = await views();
        this.reset();
        for (const v of all) {
          const n = value(v);
          if (n !== null) this.set({ poller: v.poller, key: v.cursorKey }, n);
        }
      },
    });
  pollerGauge(
    'bioalchemy_poller_stalled_seconds',
    'Seconds a literature poller has been stalled on a page it cannot read (0 while it reads); its cursor stays',
    (v) => v.stalledSeconds,
  );
  pollerGauge(
    'bioalchemy_poller_stall_alert_after_seconds',
    "A stalled poller's stallAlertAfterMs in seconds (only while stalled): the stalled-poller alert's threshold",
    (v) => (v.stalled ? v.stalled.alertAfterMs / 1000 : null),
  );
  pollerGauge(
    'bioalchemy_poller_paused_seconds',
    "Seconds left of a host's Retry-After pause before the poller may call it again (0 when none)",
    (v) => (v.paused ? Math.max(0, Math.round((Date.parse(v.paused.until) - Date.now()) / 1000)) : 0),
  );
}
