// Lease+ack round trips against a feeder URL, and the bare Fastify they are measured against
// (what HTTP and JSON cost without the feeder): shared by `npm run bench -- feeder` (a feeder in
// the bench process) and the scale bench's serving figures (the feeder `bioalchemy run` serves).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';

const CLIENTS_SCRIPT = fileURLToPath(new URL('./feeder-clients.ts', import.meta.url));

export interface RoundTrips {
  /** Each round trip's milliseconds, from its first lease request to its ack's answer. */
  ms: number[];
  seconds: number;
  /** Epoch ends answered on the way (each is part of a round trip). */
  epochEnds: number;
}

/**
 * `rounds` round trips of `batch`-item batches from `clients` ranks of `run`, the clients in a
 * process of their own (bench/feeder-clients.ts) so that their JSON work does not share the
 * server's event loop.
 */
export async function roundTrips(
  url: string,
  opts: { clients: number; rounds: number; run: string; batch: number },
): Promise<RoundTrips> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      CLIENTS_SCRIPT,
      url,
      String(opts.clients),
      String(opts.rounds),
      opts.run,
      String(opts.batch),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.on('data', (c: Buffer) => {
    out += c;
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`feeder clients exited ${code}`);
  return JSON.parse(out) as RoundTrips;
}

export const percentile = (xs: readonly number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)]!;

/** `N round trips/s, p50 x ms, p99 y ms`. */
export function roundTripFigure(r: RoundTrips): string {
  return `${Math.round(r.ms.length / r.seconds).toLocaleString('en-US')} round trips/s, p50 ${percentile(r.ms, 0.5).toFixed(2)} ms, p99 ${percentile(r.ms, 0.99).toFixed(2)} ms`;
}

/**
 * A bare Fastify answering the two requests of a round trip: a lease with `leaseJson` (a real
 * lease's bytes) and an ack of `batch` items.
 */
export async function bareFeeder(
  leaseJson: string,
  batch: number,
): Promise<{ url: string; close(): Promise<void> }> {
  const bare = Fastify({ bodyLimit: 4 * 1024 * 1024 });
  bare.post('/v1/lease', async (_req, reply) => reply.type('application/json').send(leaseJson));
  bare.post('/v1/ack', async () => ({ acked: 'x', items: batch, rewards: batch, remaining: 0 }));
  await bare.listen({ host: '127.0.0.1', port: 0 });
  return {
    url: `http://127.0.0.1:${(bare.server.address() as { port: number }).port}`,
    close: () => bare.close(),
  };
}
