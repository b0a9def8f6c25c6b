// `npm run bench -- feeder-load`: 100 concurrent trainer clients (four runs of 25 ranks) leasing
// 32-item batches and acking them with rewards for a minute, against the feeder while items and
// mix versions keep arriving (test/load/feeder-load.ts), the server in a child process of its own;
// the baseline, measured in the same run with the same clients, is bare Fastify answering the same
// two requests with a real lease's bytes.
import { type ChildProcess, spawn } from 'node:child_process';
import { driveLoad, percentile } from '../test/load/feeder-load.js';
import { fmt } from './harness.js';

const CLIENTS = 100;
const SECONDS = Number(process.env.FEEDER_LOAD_SECONDS ?? 60);

async function serve(bare: boolean): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'test/load/feeder-server.ts', ...(bare ? ['--bare'] : [])],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c;
      const m = out.match(/^(http:\S+)$/m);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`load server exited ${code}`)));
  });
  return { child, url };
}

async function stop(child: ChildProcess): Promise<string[]> {
  let out = '';
  child.stdout!.on('data', (c: Buffer) => {
    out += c;
  });
  child.stdin!.end();
  await new Promise((resolve) => child.on('exit', resolve));
  const last = out.trim().split('\n').at(-1) ?? '{}';
  return (JSON.parse(last) as { errors?: string[] }).errors ?? [];
}

export async function run(): Promise<string[]> {
  const lines = [
    `${CLIENTS} clients (4 runs x 25 ranks), lease + ack of 32-item batches, ${SECONDS} s each, server in its own process`,
  ];
  const figures: Record<string, { rate: number; p50: number; p99: number; note: string }> = {};
  for (const bare of [false, true]) {
    const { child, url } = await serve(bare);
    const r = await driveLoad({
      url,
      clients: CLIENTS,
      runs: 4,
      seconds: bare ? Math.min(SECONDS, 20) : SECONDS,
      prefix: 'bench',
      bare,
    });
    const errors = await stop(child);
    if (r.errors.length || r.doubleLeased.length || errors.length)
      throw new Error(
        `feeder-load: ${[...r.errors, ...r.doubleLeased.map((b) => `double lease ${b}`), ...errors].slice(0, 5).join('; ')}`,
      );
    figures[bare ? 'bare' : 'feeder'] = {
      rate: r.acks / r.seconds,
      p50: percentile(r.roundTrips, 0.5),
      p99: percentile(r.roundTrips, 0.99),
      note: `${r.acks} round trips, ${r.waits} waits, no double lease, ${r.acks}/${r.leases} acked`,
    };
  }
  const f = figures.feeder!;
  const b = figures.bare!;
  lines.push(
    `feeder: ${fmt(f.rate)} round trips/s, p50 ${f.p50.toFixed(1)} ms, p99 ${f.p99.toFixed(1)} ms (${f.note})`,
    `bare Fastify: ${fmt(b.rate)} round trips/s, p50 ${b.p50.toFixed(1)} ms, p99 ${b.p99.toFixed(1)} ms (${b.note})`,
    `ratios feeder/bare: throughput ${(f.rate / b.rate).toFixed(2)}x, p50 ${(f.p50 / b.p50).toFixed(1)}x, p99 ${(f.p99 / b.p99).toFixed(1)}x`,
  );
  return lines;
}
