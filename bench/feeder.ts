// Feeder round trips on loopback: lease a 128-item batch and ack it with a reward per slot, from
// 1 and 32 concurrent clients in another process (bench/feeder-clients.ts), against a bare
// Fastify server answering the same two requests with a real lease's bytes (what HTTP and JSON
// cost without the feeder), measured in the same run. The feeder runs as in `bioalchemy run`:
// its processor's timer prepares every 200 ms, and what a request leaves to do (cutting and
// rendering the next batches, planning the next epoch) runs after its response.
import { Feeder } from '../processors/feeder/feeder.js';
import { startServer } from '../server/feeder-api.js';
import { mix, poolItems } from '../test/feeder/fixtures.js';
import { bareFeeder, percentile, roundTripFigure, roundTrips as trips } from './feeder-round-trips.js';

const BATCH = 128;
const ROUNDS = Number(process.env.FEEDER_BENCH_ROUNDS ?? 400);

const roundTrips = (url: string, clients: number, run: string) =>
  trips(url, { clients, rounds: ROUNDS, run, batch: BATCH });

/** A feeder over `items` pool items served as in `bioalchemy run`. */
async function feederServer(items: number) {
  const feeder = Feeder.open(':memory:', { batchSize: BATCH, leaseMs: 600_000, readyBatches: 2 });
  feeder.addItems(poolItems(items));
  feeder.setMix(mix(1, { quotas: { ...mix(1).quotas, Botany: mix(1).quotas.Microbiology } }));
  const server = await startServer(feeder, { host: '127.0.0.1', port: 0, bodyLimit: 4 * 1024 * 1024 });
  const prepare = setInterval(() => feeder.prepare(), 200);
  return {
    feeder,
    url: server.url,
    planned: (run: string) => feeder.runStatus(run).planned,
    async close() {
      clearInterval(prepare);
      await server.close();
      feeder.close();
    },
  };
}

export async function run(): Promise<string[]> {
  // 100,000 items: epochs of about 600 batches, so a measurement (after its warm-up) crosses one
  // epoch's end of a large plan. 10,000 items: epochs of about 60 batches (each of 32 ranks gets
  // one or more), so it crosses many. Either way the next epoch is planned ahead, off the
  // request path.
  const big = await feederServer(100_000);
  const small = await feederServer(10_000);
  // The baseline answers with a real lease's bytes.
  const sample = big.feeder.leaseRaw({ run: 'sample', rank: 0, worldSize: 1, batchSize: BATCH });
  const bare = await bareFeeder(sample.json, BATCH);
  const lines: string[] = [
    `lease+ack round trips of ${BATCH}-item batches (~${Math.round(sample.json.length / 1024)} KiB), loopback, clients in another process, ${ROUNDS} per figure`,
  ];
  try {
    for (const clients of [1, 32]) {
      // A run's first lease plans its first epoch: each run is warmed up before it is measured.
      await roundTrips(bare.url, clients, 'warm');
      await roundTrips(big.url, clients, `big-${clients}`);
      await roundTrips(small.url, clients, `small-${clients}`);
      const b = await roundTrips(bare.url, clients, 'bare');
      const f = await roundTrips(big.url, clients, `big-${clients}`);
      const s = await roundTrips(small.url, clients, `small-${clients}`);
      const p99 = (x: number[]) => `p99 ${(percentile(x, 0.99) / percentile(b.ms, 0.99)).toFixed(2)}x`;
      lines.push(
        `${clients} client(s): bare Fastify ${roundTripFigure(b)}`,
        `  feeder, 100,000-item pool (${f.epochEnds} epoch ends of ${big.planned(`big-${clients}`)} items): ${roundTripFigure(f)}: ${p99(f.ms)} of bare (goal 2x)`,
        `  feeder, 10,000-item pool (${s.epochEnds} epoch ends of ${small.planned(`small-${clients}`)} items): ${roundTripFigure(s)}: ${p99(s.ms)} of bare (goal 2x)`,
      );
    }
  } finally {
    await bare.close();
    await big.close();
    await small.close();
  }
  return lines;
}
