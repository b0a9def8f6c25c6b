import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { ConcurrencyState } from './flow/endpoint.js';

/** The LLM layer's metrics, registered in the registry the process exposes. */
export class LlmMetrics {
  readonly calls: Counter<'stage' | 'model' | 'outcome'>;
  readonly tokens: Counter<'stage' | 'model' | 'direction'>;
  readonly cost: Counter<'stage' | 'model'>;
  readonly journalHits: Counter<'stage'>;
  readonly retries: Counter<'endpoint' | 'reason'>;
  readonly latency: Histogram<'stage' | 'model'>;
  readonly endpointDown: Gauge<'endpoint'>;
  readonly budgetPaused: Gauge;
  readonly inFlight: Gauge<'stage'>;
  readonly spentTodayUsd: Gauge;
  readonly budgetUsdPerDay: Gauge;

  constructor(registry: Registry) {
    const registers = [registry];
    this.calls = new Counter({
      name: 'bioalchemy_llm_calls_total',
      help: 'Model requests answered, by outcome: ok, invalid (reply refused), repaired, failed',
      labelNames: ['stage', 'model', 'outcome'],
      registers,
    });
    this.tokens = new Counter({
      name: 'bioalchemy_llm_tokens_total',
      help: 'Tokens paid for, by direction: input or output',
      labelNames: ['stage', 'model', 'direction'],
      registers,
    });
    this.cost = new Counter({
      name: 'bioalchemy_llm_cost_usd_total',
      help: 'Spend from the configured prices',
      labelNames: ['stage', 'model'],
      registers,
    });
    this.journalHits = new Counter({
      name: 'bioalchemy_llm_journal_hits_total',
      help: 'Requests answered from the response journal, at no cost',
      labelNames: ['stage'],
      registers,
    });
    this.retries = new Counter({
      name: 'bioalchemy_llm_retries_total',
      help: 'Requests sent again, by reason: rate-limit, server-error, timeout, connection',
      labelNames: ['endpoint', 'reason'],
      registers,
    });
    this.latency = new Histogram({
      name: 'bioalchemy_llm_latency_seconds',
      help: 'From the first try of a request to its reply, retries and waits included',
      labelNames: ['stage', 'model'],
      buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 180],
      registers,
    });
    this.endpointDown = new Gauge({
      name: 'bioalchemy_llm_endpoint_down',
      help: '1 while an endpoint is marked down and its calls wait for a probe to succeed',
      labelNames: ['endpoint'],
      registers,
    });
    this.budgetPaused = new Gauge({
      name: 'bioalchemy_llm_budget_paused',
      help: "1 while calls wait because the day's token or USD budget is spent",
      registers,
    });
    this.inFlight = new Gauge({
      name: 'bioalchemy_llm_in_flight',
      help: 'Model requests sent and not yet answered (admitted by the budget, waiting on the endpoint included)',
      labelNames: ['stage'],
      registers,
    });
    this.spentTodayUsd = new Gauge({
      name: 'bioalchemy_llm_spent_today_usd',
      help: 'Spend since the start of the UTC day, from the configured prices (what llm.budget.usdPerDay caps)',
      registers,
    });
    this.budgetUsdPerDay = new Gauge({
      name: 'bioalchemy_llm_budget_usd_per_day',
      help: 'The daily USD cap (llm.budget.usdPerDay); 0 when none is set',
      registers,
    });
    const labelNames = ['endpoint', 'model'] as const;
    const gauge = (name: string, help: string, read: (c: ConcurrencyState) => number) =>
      new Gauge({
        name,
        help,
        labelNames,
        registers,
        // Read at scrape time: the limit moves with every reply.
        collect: () => {
          const g = this.gauges.get(name)!;
          g.reset();
          for (const c of this.concurrency()) g.set({ endpoint: c.endpoint, model: c.model }, read(c));
        },
      });
    for (const [name, help, read] of [
      [
        'bioalchemy_llm_concurrency_limit',
        "Requests an endpoint's model is sent at once: the adaptive limit, found from its latency",
        (c: ConcurrencyState) => c.limit,
      ],
      [
        'bioalchemy_llm_concurrency_bound',
        'The most the adaptive limit may reach: llm.concurrency, or the slots the server states where fewer',
        (c: ConcurrencyState) => c.bound,
      ],
      [
        'bioalchemy_llm_concurrency_in_flight',
        "Requests sent to an endpoint's model and not yet answered",
        (c: ConcurrencyState) => c.inFlight,
      ],
      [
        'bioalchemy_llm_queueing_seen',
        "Replies that met the server's queue, timeouts and overloads (429, 503): each lowered the limit",
        (c: ConcurrencyState) => c.queueingSeen,
      ],
    ] as const)
      this.gauges.set(name, gauge(name, help, read));
  }

  private readonly gauges = new Map<string, Gauge<'endpoint' | 'model'>>();
  private concurrency: () => ConcurrencyState[] = () => [];

  /** Where the concurrency gauges read from at each scrape. */
  watchConcurrency(read: () => ConcurrencyState[]): void {
    this.concurrency = read;
  }
}
