import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

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

  constructor(opts: { defaults?: boolean } = {}) {
    if (opts.defaults) collectDefaultMetrics({ register: this.registry });
  }
}
