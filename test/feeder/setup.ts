import { Feeder, type FeederOptions } from '../../processors/feeder/feeder.js';
import type { FeederConfigInput, LeaseResponse } from '../../schemas/feeder.js';
import { mix, poolItems } from './fixtures.js';

// The feeder suites' set-up: a feeder on a file (or in memory) in small batches, filled with the
// fixtures' pool and mix, and the helpers that read its answers.

export interface FeederSetup extends FeederOptions {
  /** The feeder's file; in memory when absent. */
  readonly path?: string;
}

/** A feeder in batches of 8 with leases of a second unless `config` says otherwise; nothing in it. */
export function openFeeder(config: FeederConfigInput = {}, opts: FeederSetup = {}): Feeder {
  const { path = ':memory:', ...options } = opts;
  return Feeder.open(path, { batchSize: 8, leaseMs: 1000, ...config }, options);
}

/** openFeeder with `n` pool items and mix version 1. */
export function feederWith(n: number, config: FeederConfigInput = {}, opts: FeederSetup = {}): Feeder {
  const feeder = openFeeder(config, opts);
  feeder.addItems(poolItems(n));
  feeder.setMix(mix(1));
  return feeder;
}

/** A clock tests move: milliseconds since the epoch. */
export function clock() {
  let t = 1_000_000;
  return {
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

export type Leased = Extract<LeaseResponse, { status: 'leased' }>;

/** The lease answered, or a failure naming what came instead. */
export function leased(r: LeaseResponse): Leased {
  if (r.status !== 'leased') throw new Error(`expected a lease, got ${JSON.stringify(r)}`);
  return r;
}
