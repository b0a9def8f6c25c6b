// Load on the feeder: N trainer clients (ranks of a few runs) lease and ack as fast as they can
// for a while, against a feeder whose pool and mix keep changing the way they do while the
// pipeline runs (new classified items every 500 ms, a new mix version every 2 s, the processor's
// prepare() timer). Used by `npm run bench -- feeder-load` (server in a child process) and by
// test/load/feeder-load.test.ts (shorter). Checks as it goes: no batch leased twice, no ack lost.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { Feeder } from '../../processors/feeder/feeder.js';
import { startServer } from '../../server/feeder-api.js';
import { mix, poolItems } from '../feeder/fixtures.js';

export const BATCH = 32;

export interface LoadServer {
  readonly url: string;
  /** What the pipeline's side (prepare, new items, new mix versions) threw: must stay empty. */
  readonly errors: readonly string[];
  /** The feeder's own count of acked items per run (null for the bare baseline). */
  ackedItems(run: string): number | null;
  close(): Promise<void>;
}

/** Mix versions in this load always select every Genetics, Ecology and Microbiology item. */
const mixVersion = (v: number) =>
  mix(v, { quotas: { ...mix(1).quotas, Botany: mix(1).quotas.Microbiology } });

/**
 * The feeder API over a feeder file on disk (durable per request, as in production), with the
 * pipeline's side simulated: items and mix versions arrive on timers. `bare` serves a real lease's
 * bytes from plain Fastify instead: what HTTP and JSON cost without the feeder.
 */
export async function startLoadServer(opts: { bare?: boolean; items?: number } = {}): Promise<LoadServer> {
  const dir = mkdtempSync(join(tmpdir(), 'bioalchemy-feeder-load-'));
  const feeder = Feeder.open(join(dir, 'feeder.sqlite'), {
    batchSize: BATCH,
    leaseMs: 600_000,
    readyBatches: 2,
  });
  feeder.addItems(poolItems(opts.items ?? 20_000));
  let version = 1;
  feeder.setMix(mixVersion(version));
  if (opts.bare) {
    const sample = feeder.leaseRaw({ run: 'sample', rank: 0, worldSize: 1, batchSize: BATCH });
    feeder.close();
    const bare = Fastify({ bodyLimit: 4 * 1024 * 1024 });
    let n = 0;
    bare.post('/v1/lease', async (_req, reply) =>
      reply.type('application/json').send(sample.json.replace('"id":"sample/', `"id":"bare${n++}/`)),
    );
    bare.post('/v1/ack', async () => ({ acked: 'x', items: BATCH, rewards: BATCH }));
    await bare.listen({ host: '127.0.0.1', port: 0 });
    return {
      url: `http://127.0.0.1:${(bare.server.address() as { port: number }).port}`,
      errors: [],
      ackedItems: () => null,
      close: () => bare.close(),
    };
  }
  const server = await startServer(feeder, { host: '127.0.0.1', port: 0, bodyLimit: 4 * 1024 * 1024 });
  const errors: string[] = [];
  const guarded = (what: string, fn: () => unknown) => () => {
    try {
      fn();
    } catch (e) {
      errors.push(`${what}: ${(e as Error).message}`);
    }
  };
  let next = 0;
  const arrivals = setInterval(
    guarded('addItems', () => feeder.addItems(poolItems(200, `new${next++}`))),
    500,
  );
  const versions = setInterval(
    guarded('setMix', () => feeder.setMix(mixVersion(++version))),
    2000,
  );
  const prepare = setInterval(
    guarded('prepare', () => feeder.prepare()),
    200,
  );
  return {
    url: server.url,
    errors,
    ackedItems: (run) => feeder.runStatus(run).ackedItems,
    async close() {
      clearInterval(arrivals);
      clearInterval(versions);
      clearInterval(prepare);
      await server.close();
      feeder.close();
    },
  };
}

export interface LoadResult {
  seconds: number;
  /** Lease + ack round trips of a batch, ms. */
  roundTrips: number[];
  leases: number;
  acks: number;
  waits: number;
  /** Batch ids (with their lease) leased more than once while no lease had expired: must be empty. */
  doubleLeased: string[];
  /** Items acked (200) by the clients, per run. */
  ackedItems: Record<string, number>;
  errors: string[];
}

/**
 * `clients` trainer ranks, spread over `runs` runs (world size clients / runs each), leasing and
 * acking with rewards until `seconds` have passed.
 */
export async function driveLoad(opts: {
  url: string;
  clients: number;
  runs: number;
  seconds: number;
  prefix: string;
  /** The bare baseline answers every rank with the same batch: no rank check. */
  bare?: boolean;
}): Promise<LoadResult> {
  const worldSize = Math.ceil(opts.clients / opts.runs);
  const result: LoadResult = {
    seconds: opts.seconds,
    roundTrips: [],
    leases: 0,
    acks: 0,
    waits: 0,
    doubleLeased: [],
    ackedItems: {},
    errors: [],
  };
  const leasedBy = new Map<string, number>();
  const started = performance.now();
  const end = started + opts.seconds * 1000;
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${opts.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };
  const client = async (i: number) => {
    const run = `${opts.prefix}-${i % opts.runs}`;
    const rank = Math.floor(i / opts.runs);
    while (performance.now() < end) {
      const t = performance.now();
      const lease = await post('/v1/lease', { run, rank, worldSize, batchSize: BATCH });
      if (lease.status !== 200) {
        result.errors.push(`lease ${lease.status}: ${JSON.stringify(lease.json)}`);
        return;
      }
      if (lease.json.status !== 'leased') {
        result.waits++;
        const wait = Number(lease.json.retryAfterMs ?? 0);
        if (wait > 0) await new Promise((r) => setTimeout(r, Math.min(wait, 50)));
        continue;
      }
      result.leases++;
      const batch = lease.json.batch as { id: string; rank: number; items: unknown[] };
      if (!opts.bare && batch.rank !== rank)
        result.errors.push(`batch ${batch.id} of rank ${batch.rank} leased to rank ${rank}`);
      const seen = (leasedBy.get(batch.id) ?? 0) + 1;
      leasedBy.set(batch.id, seen);
      if (seen > 1) result.doubleLeased.push(batch.id);
      const ack = await post('/v1/ack', {
        run,
        batchId: batch.id,
        leaseId: lease.json.leaseId,
        rewards: batch.items.map((_, k) => (k % 2 === 0 ? 1 : 0)),
      });
      if (ack.status !== 200) {
        result.errors.push(`ack ${ack.status}: ${JSON.stringify(ack.json)}`);
        continue;
      }
      result.acks++;
      result.ackedItems[run] = (result.ackedItems[run] ?? 0) + batch.items.length;
      result.roundTrips.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: opts.clients }, (_, i) => client(i)));
  result.seconds = (performance.now() - started) / 1000;
  return result;
}

export const percentile = (xs: readonly number[], p: number) =>
  xs.length === 0 ? Number.NaN : [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)]!;
