import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { LLM_PROCESSORS, pipelineTopology } from '../processors/pipeline.js';
import { EmbeddedRuntime } from '../topology/runtime/embedded.js';
import { percentile } from './feeder-round-trips.js';
import { appendArticles, syntheticArticles } from './scale.js';

/**
 * The feeder's answers while the pipeline works (issue 31), as a new user meets them: one
 * `bioalchemy run` serving the feeder on a folder where ARTICLES_BEFORE articles were processed,
 * a trainer client leasing batches of 8 and acking each with rewards, one request at a time.
 * First a window with the pipeline idle, then the same window right after ARTICLES_BUSY more
 * articles are appended (the pipeline works through them, against the test LLM server, its own
 * process, on the same two cores). Figures: lease and ack latency (p50, p99), batches leased in
 * the window, CPU of each process. Twice: `run` as it is now (the LLM stages in a process of
 * their own), and every processor in one process (`--processors` naming them all: how `run` was).
 * BIOALCHEMY_BENCH_FEEDER_LOAD_WINDOW_S (default 20) and _ARTICLES (default 4,000) size it.
 */
const BIN = new URL('../bin/bioalchemy.js', import.meta.url).pathname;
const LLM_SERVER = new URL('../test/llm-server/main.ts', import.meta.url).pathname;
const WINDOW_S = Number(process.env.BIOALCHEMY_BENCH_FEEDER_LOAD_WINDOW_S ?? 20);
const ARTICLES_BEFORE = 400;
const ARTICLES_BUSY = Number(process.env.BIOALCHEMY_BENCH_FEEDER_LOAD_ARTICLES ?? 4000);
const BATCH = 8;
const WARM_UP_S = 3;
/** The figure's floor: under it a ratio measures the client, not the feeder. */
const FLOOR_MS = 2;
const TICKS_PER_S = 100;

interface Window {
  lease: number[];
  ack: number[];
  leases: number;
  /** CPU seconds per process over the window. */
  cpu: Record<string, number>;
  /** Articles extract committed during the window. */
  extracted: number;
  /** The bucket bound (ms) under which 99% of the feeder's event-loop delay samples fell. */
  loopDelayP99Ms: number;
}

export async function run(): Promise<string[]> {
  const llm = await startLlmServer();
  try {
    const lines = [
      `feeder under load: one client leasing batches of ${BATCH} and acking each with rewards, ${WINDOW_S} s windows; ` +
        `${ARTICLES_BEFORE} articles processed before, ${ARTICLES_BUSY} appended for the busy window; test LLM server (median 20 ms) its own process`,
    ];
    for (const shape of ['split', 'one process'] as const) {
      const { idle, busy } = await measure(llm.url, llm.child.pid!, shape);
      lines.push(...table(shape, idle, busy));
    }
    return lines;
  } finally {
    llm.child.kill('SIGTERM');
  }
}

async function measure(llmUrl: string, llmPid: number, shape: 'split' | 'one process') {
  const dir = mkdtempSync(join(tmpdir(), 'bench-feeder-load-'));
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      log: `file:${join(dir, 'log')}`,
      clickhouse: `chdb:${join(dir, 'chdb')}`,
      llm: { baseUrl: llmUrl, apiKeyEnv: 'BENCH_LLM_KEY', model: 'test-model' },
      server: { port: 0 },
      dashboard: { port: 0 },
    }),
  );
  const env = { ...process.env, BENCH_LLM_KEY: 'k', BIOALCHEMY_LOG_LEVEL: 'info' };
  let serving: ChildProcess | null = null;
  try {
    await appendArticles(dir, await syntheticArticles(ARTICLES_BEFORE, 0));
    const before = spawnSync(process.execPath, [BIN, 'run', '--until-idle', '--config', config], {
      env,
      encoding: 'utf8',
    });
    if (before.status !== 0) throw new Error(`run --until-idle: ${before.stderr.slice(-2000)}`);
    const all = pipelineTopology().processors.map((p) => p.name);
    const child = spawn(
      process.execPath,
      [BIN, 'run', '--config', config, ...(shape === 'split' ? [] : ['--processors', all.join(',')])],
      { env, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    serving = child;
    const { url, dashboard, pipelinePid } = await serving_(child, shape);
    const pids: Record<string, number> = {
      run: child.pid!,
      ...(pipelinePid ? { 'pipeline process': pipelinePid } : {}),
      'test LLM server': llmPid,
    };
    await firstBatch(url);
    // A few seconds of the same traffic first, so that neither window pays for a cold start.
    await window(url, dashboard, pids, dir, WARM_UP_S);
    const idle = await window(url, dashboard, pids, dir);
    await appendArticles(dir, await syntheticArticles(ARTICLES_BUSY, 1));
    const busy = await window(url, dashboard, pids, dir);
    return { idle, busy };
  } finally {
    if (serving) {
      const exited = new Promise((resolve) => serving!.once('exit', resolve));
      serving.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The feeder's URL and the pipeline process's pid, from `run`'s log lines. */
function serving_(
  child: ChildProcess,
  shape: string,
): Promise<{ url: string; dashboard: string; pipelinePid: number | null }> {
  return new Promise((resolve, reject) => {
    let url: string | null = null;
    let dashboard: string | null = null;
    let pipelinePid: number | null = null;
    let running = false;
    let tail = '';
    const lines = createInterface({ input: child.stderr! });
    const timer = setTimeout(() => reject(new Error(`run not serving in 120 s: ${tail}`)), 120_000);
    child.once('exit', (code) => reject(new Error(`run exited (${code}): ${tail}`)));
    lines.on('line', (line) => {
      tail = `${tail}\n${line}`.slice(-2000);
      let entry: { msg?: string; url?: string; pid?: number; worker?: string };
      try {
        entry = JSON.parse(line);
      } catch {
        return;
      }
      if (entry.msg === 'feeder API') url = entry.url ?? null;
      if (entry.msg === 'dashboard') dashboard = entry.url ?? null;
      if (entry.msg?.startsWith('pipeline process started')) pipelinePid = entry.pid ?? null;
      // The split's pipeline process has started its processors: its start-up is not in the idle window.
      if (entry.msg === 'running' && (shape !== 'split' || entry.worker?.endsWith('-pipeline')))
        running = true;
      if (url && dashboard && running) {
        clearTimeout(timer);
        resolve({ url, dashboard, pipelinePid });
      }
    });
  });
}

async function post(url: string, body: unknown): Promise<{ ms: number; json: Record<string, unknown> }> {
  const started = performance.now();
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  return { ms: performance.now() - started, json };
}

const LEASE = { run: 'bench', rank: 0, worldSize: 1, batchSize: BATCH };

/** Waits for the first batch: the feeder has read the pool and the mix from the log. */
async function firstBatch(url: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const { json } = await post(`${url}/v1/lease`, LEASE);
    if (json.status === 'leased') return void (await ack(url, json));
    await new Promise((r) => setTimeout(r, Math.min(500, Number(json.retryAfterMs ?? 100))));
  }
  throw new Error('no batch leased in 120 s');
}

function ack(url: string, lease: Record<string, unknown>) {
  const batch = lease.batch as { id: string; items: unknown[] };
  return post(`${url}/v1/ack`, {
    run: LEASE.run,
    batchId: batch.id,
    leaseId: lease.leaseId,
    rewards: batch.items.map((_, i) => i % 2),
  });
}

async function window(
  url: string,
  dashboard: string,
  pids: Record<string, number>,
  dir: string,
  seconds = WINDOW_S,
): Promise<Window> {
  const lease: number[] = [];
  const acks: number[] = [];
  let leases = 0;
  const cpuBefore = cpuOf(pids);
  const clientBefore = process.cpuUsage();
  const extractedBefore = extracted(dir);
  const delayBefore = await loopDelayBuckets(dashboard);
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const l = await post(`${url}/v1/lease`, LEASE);
    lease.push(l.ms);
    if (l.json.status !== 'leased') continue;
    leases++;
    acks.push((await ack(url, l.json)).ms);
  }
  const cpuAfter = cpuOf(pids);
  const client = process.cpuUsage(clientBefore);
  const cpu: Record<string, number> = {};
  for (const name of Object.keys(pids)) cpu[name] = cpuAfter[name]! - cpuBefore[name]!;
  cpu['client (bench)'] = (client.user + client.system) / 1e6;
  const delayAfter = await loopDelayBuckets(dashboard);
  return {
    lease,
    ack: acks,
    leases,
    cpu,
    extracted: extracted(dir) - extractedBefore,
    loopDelayP99Ms: bucketP99(delayBefore, delayAfter),
  };
}

/** The feeder's event-loop delay histogram from the run's /metrics: cumulative count per bucket bound (ms). */
async function loopDelayBuckets(dashboard: string): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  const text = await (await fetch(`${dashboard}/metrics`)).text();
  for (const line of text.split('\n')) {
    if (!line.startsWith('bioalchemy_feeder_event_loop_delay_seconds_bucket{')) continue;
    const le = /le="([^"]+)"/.exec(line)![1]!;
    out.set(le === '+Inf' ? Infinity : Number(le) * 1000, Number(line.split(' ').at(-1)));
  }
  return out;
}

function bucketP99(before: Map<number, number>, after: Map<number, number>): number {
  const window = [...after]
    .map(([le, n]) => [le, n - (before.get(le) ?? 0)] as const)
    .sort((a, b) => a[0] - b[0]);
  const total = window.at(-1)?.[1] ?? 0;
  return window.find(([, n]) => n >= 0.99 * total)?.[0] ?? Number.NaN;
}

/** CPU seconds each process has used (user + system, from /proc, its threads included). */
function cpuOf(pids: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    out[name] = (Number(fields[11]) + Number(fields[12])) / TICKS_PER_S;
  }
  return out;
}

/** Articles extract has committed, from the log. */
function extracted(dir: string): number {
  const runtime = EmbeddedRuntime.open(join(dir, 'log'));
  try {
    const partitions = runtime.stmts.ends.all('articles').length;
    let n = 0;
    for (let p = 0; p < partitions; p++)
      n += runtime.stmts.groupOffset.get(LLM_PROCESSORS[0]!, 'articles', p)?.next_offset ?? 0;
    return n;
  } finally {
    void runtime.close();
  }
}

function table(shape: string, idle: Window, busy: Window): string[] {
  const p = (xs: number[], q: number) => (xs.length ? percentile(xs, q) : Number.NaN);
  const row = (name: string, w: Window) =>
    `  ${name.padEnd(5)} lease p50 ${p(w.lease, 0.5).toFixed(1)} ms, p99 ${p(w.lease, 0.99).toFixed(1)} ms; ` +
    `ack p50 ${p(w.ack, 0.5).toFixed(1)} ms, p99 ${p(w.ack, 0.99).toFixed(1)} ms; ${w.leases} leases; ` +
    `${w.extracted} articles extracted; feeder event-loop delay p99 <= ${w.loopDelayP99Ms} ms; CPU ${Object.entries(
      w.cpu,
    )
      .map(([k, s]) => `${k} ${Math.round((100 * s) / WINDOW_S)}%`)
      .join(', ')}`;
  const ratio = (b: number[], i: number[], q: number) =>
    (Math.max(FLOOR_MS, p(b, q)) / Math.max(FLOOR_MS, p(i, q))).toFixed(2);
  return [
    `${shape === 'split' ? 'run (the LLM stages in a process of their own)' : 'every processor in one process (run before issue 31)'}:`,
    row('idle', idle),
    row('busy', busy),
    `  busy vs idle (${FLOOR_MS} ms floor): lease p50 ${ratio(busy.lease, idle.lease, 0.5)}x (at most 2x), p99 ${ratio(busy.lease, idle.lease, 0.99)}x (at most 3x); ` +
      `ack p50 ${ratio(busy.ack, idle.ack, 0.5)}x, p99 ${ratio(busy.ack, idle.ack, 0.99)}x; leases ${(busy.leases / Math.max(1, idle.leases)).toFixed(2)}x (at least 0.5x)`,
  ];
}

/** The test LLM server in a process of its own, so that its CPU is not the client's. */
async function startLlmServer(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', LLM_SERVER, '--responder', 'pipeline', '--median-ms', '20', '--p99-ms', '200'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`test LLM server exited (${code})`)));
  });
  return { url, child };
}
