import {
  AggregatorRegistry,
  Counter,
  collectDefaultMetrics,
  Gauge,
  Histogram,
  type MetricObjectWithValues,
  type MetricValue,
  Registry,
} from 'prom-client';

type MetricsSnapshot = MetricObjectWithValues<MetricValue<string>>[];

/** Per-processor metrics, one registry per process, exposed by `bioalchemy run --metrics-port`. */
export class EngineMetrics {
  readonly registry = new Registry();
  readonly recordsIn = new Counter({
    name: 'bioalchemy_records_in_total',
    help: 'Input records committed by a processor',
    labelNames: ['processor'],
    registers: [this.registry],
  });
  readonly recordsOut = new Counter({
    name: 'bioalchemy_records_out_total',
    help: 'Output records committed, by processor and topic',
    labelNames: ['processor', 'topic'],
    registers: [this.registry],
  });
  readonly deadLetters = new Counter({
    name: 'bioalchemy_dead_letters_total',
    help: 'Inputs refused to the dead-letter topic, by processor and code',
    labelNames: ['processor', 'code'],
    registers: [this.registry],
  });
  readonly errors = new Counter({
    name: 'bioalchemy_step_errors_total',
    help: 'Steps that failed and were retried',
    labelNames: ['processor'],
    registers: [this.registry],
  });
  readonly transactionSeconds = new Histogram({
    name: 'bioalchemy_transaction_seconds',
    help: "Time from a transaction's first step to its commit",
    labelNames: ['processor'],
    buckets: [0.001, 0.005, 0.02, 0.1, 0.5, 2, 10, 60],
    registers: [this.registry],
  });
  readonly lag = new Gauge({
    name: 'bioalchemy_consumer_lag',
    help: 'Records not yet committed by a processor, summed over its input partitions',
    labelNames: ['processor'],
    registers: [this.registry],
  });

  /** The latest metrics of other processes of this run (`run`'s pipeline process), by sender. */
  private readonly others = new Map<string, MetricsSnapshot>();

  constructor(opts: { defaults?: boolean } = {}) {
    if (opts.defaults) collectDefaultMetrics({ register: this.registry });
  }

  /** Keeps the latest snapshot (registry.getMetricsAsJSON()) another process of this run sent. */
  receive(from: string, snapshot: MetricsSnapshot): void {
    this.others.set(from, snapshot);
  }

  forget(from: string): void {
    this.others.delete(from);
  }

  /**
   * What /metrics and the dashboard read: this process's registry, with the latest snapshot of
   * every other process of the run added (their series keep their own `worker` label).
   */
  async exposed(): Promise<Registry> {
    if (this.others.size === 0) return this.registry;
    return AggregatorRegistry.aggregate([await this.registry.getMetricsAsJSON(), ...this.others.values()]);
  }
}
