import type { Registry } from 'prom-client';
import type { Analytics } from '../analytics/clickhouse.js';
import {
  type LlmUsage,
  latestMixState,
  llmSeries,
  llmUsage,
  mixPoints,
  qaRates,
  qaTotals,
  type RatePoint,
  rewardSeries,
  type TimeWindow,
  windowOf,
} from '../analytics/dashboard-queries.js';
import { viewTopicCounts } from '../analytics/qa-store.js';
import type { Feeder } from '../processors/feeder/feeder.js';
import { activePause, readPollerStates, stalledMs } from '../processors/poll.js';
import { type EvalRejectionCounts, EvalRejectionTally } from '../processors/qa/decontaminate.js';
import { jensenShannon } from '../processors/sampler/selection.js';
import { normalise, smoothedShares } from '../processors/sampler/smoothing.js';
import { DeadLetterCounts, type DeadLetterGroup } from '../schemas/dead-letter.js';
import { MixState } from '../schemas/mix-state.js';
import type { PollerState } from '../schemas/pollers.js';
import { knownCounts, type Reference } from '../schemas/reference.js';
import type { Taxonomy } from '../schemas/taxonomy.js';
import type { EngineMetrics } from '../topology/metrics.js';
import { partitionKey } from '../topology/records.js';
import type { Runtime } from '../topology/runtime/types.js';
import { FEEDER_LOOP_DELAY_SECONDS, FEEDER_REQUEST_SECONDS } from './feeder-metrics.js';
import { HistogramWindow, type WindowQuantiles } from './histogram-window.js';

// What the dashboard shows, gathered from ClickHouse (the panel queries of
// analytics/dashboard-queries.ts), the log (consumer offsets, the dlq topic), the process's
// metrics registry when the pipeline runs in it, and the feeder's file.

/** Where the panels' data comes from. Only `analytics` is required; a missing source leaves its panel empty. */
export interface DashboardSources {
  readonly analytics: Analytics;
  readonly reference: Reference;
  readonly taxonomy: Taxonomy;
  /** The configured α, shown until the sampler publishes a mix. */
  readonly alpha: number;
  /** The configured daily USD cap, if any. */
  readonly usdPerDay?: number | undefined;
  /** The log: per-processor lag and throughput from committed offsets, dead letters from `dlq`. */
  readonly runtime?: Runtime | null;
  /** Processors and the topics they read (the pipeline's topology). */
  readonly processors?: readonly { name: string; reads: readonly string[] }[];
  /** The metrics of the pipeline when it runs in this process (errors, in-flight LLM calls); lag is set here. */
  readonly metrics?: EngineMetrics | null;
  /** Set the lag gauge of `metrics` from the offsets (standalone: no task in this process sets it). */
  readonly exportLag?: boolean;
  readonly feeder?: Feeder | null;
}

export interface Series {
  readonly name: string;
  readonly data: (number | null)[];
}

export interface Snapshot {
  readonly at: number;
  readonly window: TimeWindow & { readonly span: number };
  readonly totals: {
    qa: number;
    accepted: number;
    articles: number;
    latestClassified: number;
    mixVersion: number | null;
    deadLetters: number;
    /** Dead letters re-driven by `bioalchemy dlq replay` (the compacted dlq.replayed). */
    deadLettersReplayed: number;
  };
  readonly topics: {
    categories: { id: string; name: string }[];
    dataset: number[];
    datasetShare: number[];
    reference: (number | null)[];
    target: number[];
    alpha: number;
    mixVersion: number | null;
    starving: string[];
    metrics: MixState['metrics'] | null;
  };
  readonly drift: { t: number[]; series: Series[] };
  readonly rates: {
    t: number[];
    qaBySource: Series[];
    articlesBySource: Series[];
    qaByJournal: Series[];
  };
  readonly deadLetters: DeadLetterGroup[];
  readonly processors: {
    name: string;
    lag: number;
    perSecond: number;
    committed: number;
    errors: number;
    inFlightLlm: number;
  }[];
  readonly llm: {
    usage: LlmUsage[];
    t: number[];
    costByStage: Series[];
    spentTodayUsd: number;
    usdPerDay: number | null;
  };
  readonly feeder: {
    ranks: { run: string; rank: number; leased: number; acked: number }[];
    runs: {
      run: string;
      ready: number;
      leased: number;
      acked: number;
      redelivered: number;
      ackedItems: number;
      /** Rollouts acked, flat groups among them, times band-pass set an item aside. */
      rollouts: number;
      flatGroups: number;
      setAside: number;
    }[];
    t: number[];
    rewardByTopic: Series[];
    /**
     * What trainer ranks waited for their answers, and the feeder process's event-loop delay,
     * since the previous snapshot (server/feeder-metrics.ts): backpressure, before it is lost leases.
     */
    answers: { lease: WindowQuantiles; ack: WindowQuantiles; loopDelay: WindowQuantiles };
  };
  /** Each literature poller from its committed state: a stalled one says why and since when. */
  readonly pollers: PollerView[];
  /** Grade's rejections per eval set (grade.evalSets): contaminated, eval-source. */
  readonly evalRejections: EvalRejectionCounts;
  /** Milliseconds each part took to gather, for the benchmark and the page's footer. */
  readonly timings: Record<string, number>;
}

export type PollerView = PollerState & {
  cursorKey: string;
  state: 'reading' | 'stalled' | 'paused';
  stalledSeconds: number;
  /** Stalled for longer than its stallAlertAfterMs: BioalchemyPollerStalled fires. */
  alerting: boolean;
};

/** What the dashboard and /metrics show of each poller's committed state at `now`. */
export function pollerViews(states: (PollerState & { cursorKey: string })[], now: Date): PollerView[] {
  return states.map((p) => {
    const ms = stalledMs(p, now);
    return {
      ...p,
      state: p.stalled ? 'stalled' : activePause(p, now) ? 'paused' : 'reading',
      stalledSeconds: Math.round(ms / 1000),
      alerting: p.stalled !== null && ms >= p.stalled.alertAfterMs,
    };
  });
}

/**
 * The `dlq` topic counted by code and processor (DeadLetterCounts), read incrementally from the
 * log. A record that is no dead letter (anyone can produce to the topic) counts as such; an old
 * one without a code under the code its reason implies.
 */
export class DeadLetterTail {
  private readonly counts = new DeadLetterCounts();
  private readonly tail = new TopicTail('dlq', (value) => this.counts.add(value));

  get total(): number {
    return this.counts.total;
  }

  update(runtime: Runtime): Promise<void> {
    return this.tail.update(runtime);
  }

  byCode(): DeadLetterGroup[] {
    return this.counts.byCode();
  }
}

/**
 * The dead letters `bioalchemy dlq replay` re-drove (dlq.replayed), counted once per dead-letter
 * id, read incrementally from the log: the panel shows them beside the dead letters.
 */
export class ReplayedTail {
  private readonly ids = new Set<string>();
  private readonly tail = new TopicTail('dlq.replayed', (value) => {
    try {
      const id = (JSON.parse(value) as { deadLetterId?: unknown } | null)?.deadLetterId;
      if (typeof id === 'string') this.ids.add(id);
    } catch {
      // Not JSON: anyone can produce to the topic; it replays nothing.
    }
  });

  get total(): number {
    return this.ids.size;
  }

  update(runtime: Runtime): Promise<void> {
    return this.tail.update(runtime);
  }
}

/** qa.rejected tallied by eval set (EvalRejectionTally), read incrementally from the log. */
export class EvalRejectionTail {
  private readonly tally = new EvalRejectionTally();
  private readonly tail = new TopicTail('qa.rejected', (value) => {
    try {
      this.tally.add(JSON.parse(value));
    } catch {
      // Not JSON: anyone can produce to the topic, and such a record names no eval set.
    }
  });

  get counts(): EvalRejectionCounts {
    return this.tally.counts;
  }

  update(runtime: Runtime): Promise<void> {
    return this.tail.update(runtime);
  }
}

/** A topic read incrementally from the log: each update hands every value since the last to `add`. */
class TopicTail {
  private readonly next = new Map<number, number>();

  constructor(
    private readonly topic: string,
    private readonly add: (value: string) => void,
  ) {}

  async update(runtime: Runtime): Promise<void> {
    const ends = await runtime.endOffsets(this.topic).catch(() => [] as number[]);
    for (const [partition, end] of ends.entries()) {
      let from = this.next.get(partition) ?? 0;
      while (from < end) {
        const records = await runtime.read(this.topic, partition, from, 1000);
        if (records.length === 0) break;
        for (const r of records) this.add(r.value);
        from = records[records.length - 1]!.offset + 1;
      }
      this.next.set(partition, from);
    }
  }
}

/** Gathers snapshots; keeps what incremental sources need (dead-letter offsets, committed offsets). */
export class DashboardData {
  private readonly dlq = new DeadLetterTail();
  private readonly replayed = new ReplayedTail();
  private readonly evalRejections = new EvalRejectionTail();
  private lastCommitted = new Map<string, { at: number; committed: number }>();

  constructor(private readonly sources: DashboardSources) {}

  async snapshot(opts: { windowSeconds: number; now?: number }): Promise<Snapshot> {
    const now = opts.now ?? Date.now();
    const w = windowOf(opts.windowSeconds, now);
    const timings: Record<string, number> = {};
    const time = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
      const started = performance.now();
      try {
        return await fn();
      } finally {
        timings[name] = Math.round((performance.now() - started) * 10) / 10;
      }
    };
    // One at a time: chdb runs one query at a time anyway, and the timings stay each query's own.
    const totals = await time('totals', () => qaTotals(this.sources.analytics));
    const topics = await time('topics', () => this.topics());
    const drift = await time('drift', () => this.drift(w));
    const rates = await time('rates', () => this.rates(w));
    const llm = await time('llm', () => this.llm(w, now));
    const feeder = await time('feeder', () => this.feeder(w));
    const processors = await time('processors', () => this.processors(now));
    const deadLetters = await time('deadLetters', async () => {
      if (this.sources.runtime) {
        await this.dlq.update(this.sources.runtime);
        await this.replayed.update(this.sources.runtime);
      }
      return this.dlq.byCode();
    });
    const pollers = await time('pollers', async () =>
      this.sources.runtime ? pollerViews(await readPollerStates(this.sources.runtime), new Date(now)) : [],
    );
    const evalRejections = await time('evalRejections', async () => {
      if (this.sources.runtime) await this.evalRejections.update(this.sources.runtime);
      return this.evalRejections.counts;
    });
    return {
      at: now,
      window: { ...w, span: opts.windowSeconds },
      totals: {
        qa: totals.qa,
        accepted: totals.accepted,
        articles: totals.articles,
        latestClassified: totals.latestSeconds,
        mixVersion: topics.mixVersion,
        deadLetters: this.dlq.total,
        deadLettersReplayed: this.replayed.total,
      },
      topics,
      drift,
      rates,
      deadLetters,
      processors,
      llm,
      feeder,
      pollers,
      evalRejections,
      timings,
    };
  }

  private async latestMix(): Promise<MixState | null> {
    const state = await latestMixState(this.sources.analytics);
    return state === null ? null : MixState.parse(JSON.parse(state));
  }

  async topics(): Promise<Snapshot['topics']> {
    const { taxonomy, reference } = this.sources;
    const [counts, mix] = [await viewTopicCounts(this.sources.analytics), await this.latestMix()];
    const known = knownCounts(reference).counts;
    const referenceShares = normalise(known);
    const alpha = mix?.alpha ?? this.sources.alpha;
    const target = mix?.target ?? smoothedShares(known, alpha);
    const ids = [...new Set([...taxonomy.categories.map((c) => c.id), ...counts.map((c) => c.category)])];
    const name = new Map(taxonomy.categories.map((c) => [c.id, c.name]));
    const n = new Map(counts.map((c) => [c.category, c.n]));
    const labels = counts.reduce((s, c) => s + c.n, 0);
    return {
      categories: ids.map((id) => ({ id, name: name.get(id) ?? id })),
      dataset: ids.map((id) => n.get(id) ?? 0),
      datasetShare: ids.map((id) => (labels ? (n.get(id) ?? 0) / labels : 0)),
      reference: ids.map((id) => (id in referenceShares ? referenceShares[id]! : null)),
      target: ids.map((id) => target[id] ?? 0),
      alpha,
      mixVersion: mix?.version ?? null,
      starving: mix?.starving ?? [],
      metrics: mix?.metrics ?? null,
    };
  }

  async drift(w: TimeWindow): Promise<Snapshot['drift']> {
    const points = await mixPoints(this.sources.analytics, w);
    const jsReference = points.map((p) => {
      const m = MixState.parse(JSON.parse(p.state));
      const categories = Object.keys(m.reference.counts);
      const observed = normalise(Object.fromEntries(categories.map((c) => [c, m.observed[c] ?? 0])));
      return jensenShannon(observed, normalise(m.reference.counts));
    });
    return {
      t: points.map((p) => p.atSeconds * 1000),
      series: [
        { name: 'TVD, dataset to reference', data: points.map((p) => p.tvdReference) },
        { name: 'JS distance, dataset to reference', data: jsReference },
        { name: 'TVD, mix to target', data: points.map((p) => p.tvdTarget) },
        { name: 'JS distance, mix to target', data: points.map((p) => p.jsTarget) },
      ],
    };
  }

  async rates(w: TimeWindow): Promise<Snapshot['rates']> {
    const t = buckets(w);
    const perMinute = 60 / w.step;
    const bySource = await qaRates(this.sources.analytics, w, 'source');
    const byJournal = await qaRates(this.sources.analytics, w, 'journal');
    return {
      t: t.map((s) => s * 1000),
      qaBySource: pivot(t, bySource, (p) => p.qa * perMinute),
      articlesBySource: pivot(t, bySource, (p) => p.articles * perMinute),
      qaByJournal: pivot(t, topKeys(byJournal, 8), (p) => p.qa * perMinute),
    };
  }

  async llm(w: TimeWindow, now: number): Promise<Snapshot['llm']> {
    const dayStart = Math.floor(now / 86_400_000) * 86_400;
    const usage = await llmUsage(this.sources.analytics, dayStart);
    const series = await llmSeries(this.sources.analytics, w);
    const t = buckets(w);
    return {
      usage,
      t: t.map((s) => s * 1000),
      costByStage: pivot(
        t,
        series.map((p) => ({ t: p.t, key: p.stage, value: p.costUsd })),
        (p) => p.value,
      ),
      spentTodayUsd: usage.reduce((s, u) => s + u.costTodayUsd, 0),
      usdPerDay: this.sources.usdPerDay ?? null,
    };
  }

  private readonly answerWindows = {
    lease: new HistogramWindow(FEEDER_REQUEST_SECONDS, { route: 'lease' }),
    ack: new HistogramWindow(FEEDER_REQUEST_SECONDS, { route: 'ack' }),
    loopDelay: new HistogramWindow(FEEDER_LOOP_DELAY_SECONDS),
  };

  async feeder(w: TimeWindow): Promise<Snapshot['feeder']> {
    const ranks: Snapshot['feeder']['ranks'] = [];
    const runs: Snapshot['feeder']['runs'] = [];
    const feeder = this.sources.feeder;
    if (feeder) {
      for (const run of feeder.runNames()) {
        const s = feeder.runStatus(run);
        runs.push({ run, ...s.batches, ackedItems: s.ackedItems, ...s.difficulty });
        for (const r of s.ranks) ranks.push({ run, rank: r.rank, leased: r.leased, acked: r.acked });
      }
    }
    const rewards = await rewardSeries(this.sources.analytics, w);
    const t = buckets(w);
    const registry = await this.sources.metrics?.exposed();
    return {
      ranks,
      runs,
      answers: {
        lease: await this.answerWindows.lease.read(registry),
        ack: await this.answerWindows.ack.read(registry),
        loopDelay: await this.answerWindows.loopDelay.read(registry),
      },
      t: t.map((s) => s * 1000),
      rewardByTopic: pivot(
        t,
        rewards.map((r) => ({ t: r.t, key: `${r.run} · ${r.category}`, value: r.meanReward })),
        (p) => p.value,
        null,
      ),
    };
  }

  async processors(now: number): Promise<Snapshot['processors']> {
    const { runtime, processors = [], metrics, exportLag } = this.sources;
    if (!runtime) return [];
    const registry = await metrics?.exposed();
    const errors = await metricValues(registry, 'bioalchemy_step_errors_total', 'processor');
    const inFlight = new Map<string, number>();
    for (const [stage, n] of await metricValues(registry, 'bioalchemy_llm_in_flight', 'stage')) {
      const processor = PROCESSOR_OF_STAGE[stage] ?? stage;
      inFlight.set(processor, (inFlight.get(processor) ?? 0) + n);
    }
    const out: Snapshot['processors'] = [];
    const seen = new Map<string, { at: number; committed: number }>();
    for (const p of processors) {
      let lag = 0;
      let committed = 0;
      const offsets = await runtime.committedOffsets(p.name, p.reads).catch(() => new Map<string, number>());
      for (const topic of p.reads) {
        const ends = await runtime.endOffsets(topic).catch(() => [] as number[]);
        ends.forEach((end, partition) => {
          const c = offsets.get(partitionKey(topic, partition)) ?? 0;
          committed += c;
          lag += Math.max(0, end - c);
        });
      }
      const before = this.lastCommitted.get(p.name);
      const seconds = before ? (now - before.at) / 1000 : 0;
      const perSecond = before && seconds > 0 ? Math.max(0, committed - before.committed) / seconds : 0;
      seen.set(p.name, { at: now, committed });
      // Standalone, the lag gauge is this process's only source of it for /metrics.
      if (exportLag) metrics?.lag.set({ processor: p.name }, lag);
      out.push({
        name: p.name,
        lag,
        perSecond,
        committed,
        errors: errors.get(p.name) ?? 0,
        inFlightLlm: inFlight.get(p.name) ?? 0,
      });
    }
    this.lastCommitted = seen;
    return out;
  }
}

/** The processor whose work each LLM stage is. */
const PROCESSOR_OF_STAGE: Record<string, string> = {
  relevance: 'extract',
  mcq: 'extract',
  freeform: 'extract',
  'mcq-quality': 'grade',
  'freeform-grade': 'grade',
  classify: 'classify',
};

async function metricValues(
  registry: Registry | undefined,
  name: string,
  label: string,
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const metric = registry?.getSingleMetric(name);
  if (!metric) return out;
  for (const v of (await metric.get()).values) {
    const key = String(v.labels[label] ?? '');
    out.set(key, (out.get(key) ?? 0) + v.value);
  }
  return out;
}

function buckets(w: TimeWindow): number[] {
  const t: number[] = [];
  for (let s = w.from; s < w.to; s += w.step) t.push(s);
  return t;
}

/** One series per key over the buckets `t`; buckets without a row are `empty` (0, or null for averages). */
function pivot<P extends { t: number; key: string }>(
  t: readonly number[],
  points: readonly P[],
  value: (p: P) => number,
  empty: number | null = 0,
): Series[] {
  const index = new Map(t.map((s, i) => [s, i]));
  const series = new Map<string, (number | null)[]>();
  for (const p of points) {
    const i = index.get(p.t);
    if (i === undefined) continue;
    const name = p.key || '(unknown)';
    let data = series.get(name);
    if (!data) {
      data = t.map(() => empty);
      series.set(name, data);
    }
    data[i] = (data[i] ?? 0) + value(p);
  }
  return [...series].map(([name, data]) => ({ name, data })).sort((a, b) => a.name.localeCompare(b.name));
}

/** The `k` keys with the most QA over the window; the rest summed as "other". */
function topKeys(points: readonly RatePoint[], k: number): RatePoint[] {
  const total = new Map<string, number>();
  for (const p of points) total.set(p.key, (total.get(p.key) ?? 0) + p.qa);
  const keep = new Set(
    [...total]
      .sort((a, b) => b[1] - a[1])
      .slice(0, k)
      .map(([key]) => key),
  );
  return points.map((p) => (keep.has(p.key) ? p : { ...p, key: 'other' }));
}
