// Feeder round trips on loopback: lease a 128-item batch and ack it with rewards, from 1 and 32
// concurrent clients, against a bare Fastify server answering the same two requests with
// pre-rendered bodies of the same size (what HTTP and JSON cost without the feeder).
import Fastify from 'fastify';
import { Feeder } from '../processors/feeder/feeder.js';
import { startServer } from '../server/feeder-api.js';
import { mix, poolItems } from '../test/feeder/fixtures.js';
import { fmt } from './harness.js';

const BATCH = 128;
const ROUNDS = 400;

async function roundTrips(url: string, clients: number, run: string): Promise<number[]> {
  const latencies: number[] = [];
  let left = ROUNDS;
  const client = async (rank: number) => {
    while (left-- > 0) {
      const t = performance.now();
      const lease = (await (
        await fetch(`${url}/v1/lease`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ run, rank, worldSize: clients, batchSize: BATCH }),
        })
      ).json()) as { leaseId: string; batch: { id: string; items: unknown[] } };
      const res = await fetch(`${url}/v1/ack`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          run,
          batchId: lease.batch.id,
          leaseId: lease.leaseId,
          rewards: lease.batch.items.map(() => 0.5),
        }),
      });
      if (res.status !== 200) throw new Error(`ack ${res.status}: ${await res.text()}`);
      latencies.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: clients }, (_, rank) => client(rank)));
  return latencies;
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)]!;

export async function run(): Promise<string[]> {
  // Enough items that 32 ranks never reach the end of an epoch during the measurement.
  const feeder = Feeder.open(':memory:', { batchSize: BATCH, leaseMs: 600_000, readyBatches: 4 });
  feeder.addItems(poolItems(100_000));
  feeder.setMix(mix(1, { quotas: { ...mix(1).quotas, Botany: mix(1).quotas.Microbiology } }));
  const server = await startServer(feeder, { host: '127.0.0.1', port: 0, bodyLimit: 4 * 1024 * 1024 });
  const prepare = setInterval(() => feeder.prepare(), 200);
  // The baseline answers with a real lease's bytes.
  const sample = feeder.leaseRaw({ run: 'sample', rank: 0, worldSize: 1, batchSize: BATCH });
  const bare = Fastify({ bodyLimit: 4 * 1024 * 1024 });
  bare.post('/v1/lease', async (_req, reply) => reply.type('application/json').send(sample.json));
  bare.post('/v1/ack', async () => ({ acked: 'x', items: BATCH, rewards: BATCH }));
  await bare.listen({ host: '127.0.0.1', port: 0 });
  const bareUrl = `http://127.0.0.1:${(bare.server.address() as { port: number }).port}`;
  const lines: string[] = [
    `lease+ack round trips of ${BATCH}-item batches (~${Math.round(sample.json.length / 1024)} KiB), loopback, ${ROUNDS} per figure`,
  ];
  try {
    for (const clients of [1, 32]) {
      await roundTrips(server.url, clients, `warm-${clients}`);
      await roundTrips(bareUrl, clients, 'warm');
      const t0 = performance.now();
      const f = await roundTrips(server.url, clients, `bench-${clients}`);
      const fs = (performance.now() - t0) / 1000;
      const t1 = performance.now();
      const b = await roundTrips(bareUrl, clients, 'bare');
      const bs = (performance.now() - t1) / 1000;
      lines.push(
        `${clients} client(s): feeder ${fmt(f.length / fs)} round trips/s, p50 ${pct(f, 0.5).toFixed(2)} ms, p99 ${pct(f, 0.99).toFixed(2)} ms` +
          ` vs bare Fastify ${fmt(b.length / bs)}/s, p50 ${pct(b, 0.5).toFixed(2)} ms, p99 ${pct(b, 0.99).toFixed(2)} ms = ${(f.length / fs / (b.length / bs)).toFixed(2)}x`,
      );
    }
  } finally {
    clearInterval(prepare);
    await bare.close();
    await server.close();
    feeder.close();
  }
  return lines;
}
