import type { FastifyInstance } from 'fastify';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { Feeder, RunDifficultyTotals } from '../processors/feeder/feeder.js';

// Backpressure made visible: what a trainer rank waits for its answers, and how late the feeder's
// event loop runs, in the process that serves the feeder. A loop held by other work (a step of
// the pipeline in the same process, a long GC) shows in the delay before it shows in the answers.

/** Buckets in seconds: a lease answered from memory takes a millisecond or two. */
const SECONDS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2];

/** How often the event loop's delay is sampled: a timer asked for every 20 ms, and how late it fires. */
const SAMPLE_EVERY_MS = 20;

export const FEEDER_REQUEST_SECONDS = 'bioalchemy_feeder_request_seconds';
export const FEEDER_LOOP_DELAY_SECONDS = 'bioalchemy_feeder_event_loop_delay_seconds';
export const FEEDER_SET_ASIDE = 'bioalchemy_feeder_items_set_aside_total';
export const FEEDER_FLAT_GROUPS = 'bioalchemy_feeder_flat_groups_total';
export const FEEDER_ROLLOUTS = 'bioalchemy_feeder_rollouts_total';
export const FEEDER_SERVED_ASIDE = 'bioalchemy_feeder_set_aside_served_total';

/** What the difficulty counters read: per run, totals kept in the feeder's file. */
export type DifficultyTotals = Pick<Feeder, 'difficultyTotals'>;

/**
 * Band-pass made visible (issue 44): per run, times items were set aside, acked groups whose
 * rollouts all had one reward, and rollouts acked. Read from the feeder's file at each scrape (one
 * aggregate over the per-item records, bounded by the pool), so they survive restarts as acks do.
 */
export function difficultyCounters(registry: Registry, feeder: DifficultyTotals): void {
  const counter = (name: string, help: string, pick: (t: RunDifficultyTotals) => number) => {
    if (registry.getSingleMetric(name)) registry.removeSingleMetric(name);
    new Counter({
      name,
      help,
      labelNames: ['run'],
      registers: [registry],
      collect() {
        this.reset();
        for (const t of feeder.difficultyTotals()) if (pick(t) > 0) this.inc({ run: t.run }, pick(t));
      },
    });
  };
  counter(
    FEEDER_SET_ASIDE,
    'Times band-pass set an item aside (pass rate outside the band), by run',
    (t) => t.setAside,
  );
  counter(
    FEEDER_FLAT_GROUPS,
    'Acked rollout groups whose rewards were all equal (no GRPO advantage), by run',
    (t) => t.flat,
  );
  counter(FEEDER_ROLLOUTS, 'Rollouts acked with their rewards or mean and count, by run', (t) => t.rollouts);
  counter(
    FEEDER_SERVED_ASIDE,
    'Set-aside items cut into a batch for lack of a live item of their topics, by run',
    (t) => t.servedAside,
  );
}

/**
 * Registers the feeder's request latency (per route, from the request's arrival to its answer
 * written) and event-loop delay histograms in `registry`, and times the app's requests. Returns
 * what stops the sampling timer.
 */
export function instrumentFeeder(app: FastifyInstance, registry: Registry): () => void {
  const requests =
    (registry.getSingleMetric(FEEDER_REQUEST_SECONDS) as Histogram<'route'> | undefined) ??
    new Histogram({
      name: FEEDER_REQUEST_SECONDS,
      help: 'Feeder API requests, from arrival to the answer written, by route (lease, ack, ...): what a trainer rank waits',
      labelNames: ['route'],
      buckets: SECONDS,
      registers: [registry],
    });
  const delay =
    (registry.getSingleMetric(FEEDER_LOOP_DELAY_SECONDS) as Histogram | undefined) ??
    new Histogram({
      name: FEEDER_LOOP_DELAY_SECONDS,
      help: `How late the feeder process's event loop runs a timer due every ${SAMPLE_EVERY_MS} ms: the wait any request meets before it is read`,
      buckets: SECONDS,
      registers: [registry],
    });
  app.addHook('onResponse', async (req, reply) => {
    // The route's last path segment (lease, ack, runs, ...); unknown paths are one label, not many.
    const route = req.routeOptions.url?.split('/').filter(Boolean)[1] ?? 'other';
    requests.observe({ route }, reply.elapsedTime / 1000);
  });
  let due = performance.now() + SAMPLE_EVERY_MS;
  const timer = setInterval(() => {
    const now = performance.now();
    delay.observe(Math.max(0, now - due) / 1000);
    due = now + SAMPLE_EVERY_MS;
  }, SAMPLE_EVERY_MS).unref();
  return () => clearInterval(timer);
}
