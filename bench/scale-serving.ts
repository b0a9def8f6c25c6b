import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { openClickHouse } from '../analytics/clickhouse.js';
import { forEachQaItem } from '../analytics/qa-store.js';
import { selectionParams } from '../processors/sampler/mix.js';
import { computeSelection, ItemIndex } from '../processors/sampler/selection.js';
import { loadConfig } from '../schemas/config.js';
import type { FeederStatus, LeaseResponse } from '../schemas/feeder.js';
import { loadReference } from '../schemas/reference.js';
import { bareFeeder, percentile, roundTripFigure, roundTrips } from './feeder-round-trips.js';
import { fmt } from './harness.js';

/**
 * What serves a finished pipeline, at the size it reached (the scale bench calls it after `run
 * --until-idle` on N articles), each figure beside a baseline measured in the same run:
 *  - the sampler: a full recompute of the mix over every accepted QA in ClickHouse, vs reading
 *    those items from ClickHouse (in a child process, so its peak RSS is its own); and the whole
 *    `bioalchemy mix` command;
 *  - the feeder as `bioalchemy run` serves it: from spawn to the first lease on the full pool (the
 *    first lease makes the mix's selection over the pool in one piece), then lease+ack round trips
 *    of 128-item batches vs a bare Fastify answering with that lease's bytes;
 *  - the dashboard as `bioalchemy dashboard` serves it (after the feeder's process stopped: one
 *    process per chdb folder): one snapshot over a week's window, vs the same on an empty folder;
 *  - RSS of each serving process, sampled from /proc every 250 ms.
 */
const BIN = fileURLToPath(new URL('../bin/bioalchemy.js', import.meta.url));
const SELF = fileURLToPath(import.meta.url);
const BATCH = 128;
const ROUNDS = Number(process.env.BIOALCHEMY_BENCH_SCALE_LEASES ?? 400);
/** Snapshots measured after the first (cold) one. */
const SNAPSHOTS = 5;
const WEEK = 7 * 86_400;
/** The shortest dashboard refresh: a snapshot asked after it is gathered anew, not the cached one. */
const REFRESH_MS = 250;

export async function servingAtScale(ws: { dir: string; config: string }): Promise<string[]> {
  const config = servingConfig(
    ws.dir,
    JSON.parse(readFileSync(ws.config, 'utf8')) as Record<string, unknown>,
  );
  const empty = mkdtempSync(join(tmpdir(), 'bench-scale-empty-'));
  try {
    const emptyConfig = servingConfig(empty, {
      log: `file:${join(empty, 'log')}`,
      clickhouse: `chdb:${join(empty, 'chdb')}`,
    });
    return [
      ...(await samplerFigures(config)),
      ...(await feederFigures(config)),
      ...(await dashboardFigures(config, emptyConfig)),
    ];
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
}

/** The workspace's config with the feeder and the dashboard on free ports and the shortest refresh. */
function servingConfig(dir: string, base: Record<string, unknown>): string {
  const path = join(dir, 'serving.json');
  const section = (name: string) => (base[name] ?? {}) as Record<string, unknown>;
  writeFileSync(
    path,
    JSON.stringify({
      ...base,
      server: { ...section('server'), port: 0 },
      dashboard: { ...section('dashboard'), port: 0, refreshMs: REFRESH_MS },
    }),
  );
  return path;
}

// ---- the sampler ---------------------------------------------------------------------------------

interface SamplerFigures {
  readonly items: number;
  readonly selected: number;
  readonly readMs: number;
  readonly indexMs: number;
  readonly recomputeMs: number;
  readonly peakRssMb: number;
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** In the child: the pool read from ClickHouse, then the mix recomputed over it (median of 3). */
async function measureSampler(configPath: string): Promise<SamplerFigures> {
  const config = loadConfig(configPath);
  const analytics = await openClickHouse(config.clickhouse);
  const index = new ItemIndex();
  let readMs: number;
  let indexMs: number;
  try {
    // The first query of a table pays for loading its parts: the read measured is a warm one.
    await forEachQaItem(analytics, () => {});
    let started = performance.now();
    await forEachQaItem(analytics, () => {});
    readMs = performance.now() - started;
    started = performance.now();
    await forEachQaItem(analytics, (item) => index.add(item));
    indexMs = performance.now() - started;
  } finally {
    await analytics.close();
  }
  const params = selectionParams(config.sampler, loadReference(config.sampler.reference));
  const recomputes: number[] = [];
  let selected = 0;
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    selected = computeSelection(index, params).metrics.size;
    recomputes.push(performance.now() - started);
  }
  return {
    items: index.size,
    selected,
    readMs,
    indexMs,
    recomputeMs: median(recomputes),
    peakRssMb: process.resourceUsage().maxRSS / 1024,
  };
}

async function samplerFigures(config: string): Promise<string[]> {
  const child = spawnSync(process.execPath, ['--import', 'tsx', SELF, 'sampler', config], {
    encoding: 'utf8',
    maxBuffer: 1 << 20,
  });
  if (child.status !== 0) throw new Error(`sampler figures: ${child.stderr.slice(-2000)}`);
  const f = JSON.parse(child.stdout.trim().split('\n').at(-1)!) as SamplerFigures;
  const mix = await runToEnd(config, ['mix', '--json']);
  return [
    `sampler over the pool, ${fmt(f.items)} accepted QA (${fmt(f.selected)} copies selected): recompute ${f.recomputeMs.toFixed(0)} ms ` +
      `vs reading the pool from ClickHouse ${f.readMs.toFixed(0)} ms = ${(f.recomputeMs / f.readMs).toFixed(2)}x; ` +
      `read into the index ${f.indexMs.toFixed(0)} ms; peak RSS ${f.peakRssMb.toFixed(0)} MB`,
    `  bioalchemy mix --json, the whole command: ${mix.seconds.toFixed(2)} s, peak RSS ${peak(mix.rss).toFixed(0)} MB`,
  ];
}

// ---- the feeder ----------------------------------------------------------------------------------

async function feederFigures(config: string): Promise<string[]> {
  const logBefore = logBytes(config);
  // The whole pipeline as a user runs it, with nothing left to do: the feeder serves beside it.
  const served = serve(config, ['run', '--no-dashboard']);
  let lines: string[];
  let leases = 0;
  try {
    const api = JSON.parse(await served.line((l) => l.includes('"msg":"feeder API"'))) as { url: string };
    const listeningS = served.secondsSinceSpawn();
    const request = { run: 'scale-first', rank: 0, worldSize: 1, batchSize: BATCH };
    let first: { json: string; ms: number };
    for (;;) {
      const started = performance.now();
      const res = await post(`${api.url}/v1/lease`, request);
      const answer = JSON.parse(res) as LeaseResponse;
      if (answer.status === 'leased') {
        first = { json: res, ms: performance.now() - started };
        break;
      }
      if (answer.status !== 'wait') throw new Error(`first lease: ${res.slice(0, 500)}`);
      await sleep(answer.retryAfterMs);
    }
    const leasedS = served.secondsSinceSpawn();
    const rssAtLease = served.rssNow();
    const status = (await (await fetch(`${api.url}/v1/status`)).json()) as FeederStatus;
    const bare = await bareFeeder(first.json, BATCH);
    try {
      const options = (run: string, rounds: number) => ({ clients: 1, rounds, run, batch: BATCH });
      // A run's first lease plans its first epoch: each is warmed up before it is measured.
      await roundTrips(bare.url, options('warm', 20));
      await roundTrips(api.url, options('scale', 20));
      const b = await roundTrips(bare.url, options('bare', ROUNDS));
      const f = await roundTrips(api.url, options('scale', ROUNDS));
      leases = 1 + 20 + ROUNDS;
      const ratio = (p: number) => (percentile(f.ms, p) / percentile(b.ms, p)).toFixed(2);
      lines = [
        `feeder (bioalchemy run over the finished folder), pool ${fmt(status.pool)} QA, ${fmt(status.selected)} copies selected: ` +
          `API up ${listeningS.toFixed(2)} s after spawn, first lease ${leasedS.toFixed(2)} s after spawn ` +
          `(that request ${first.ms.toFixed(0)} ms: it makes the selection over the whole pool and plans epoch 0, beside the processors starting)`,
        `  lease+ack of ${BATCH}-item batches (~${Math.round(first.json.length / 1024)} KiB), 1 client, ${ROUNDS} round trips ` +
          `(${f.epochEnds} epoch ends): ${roundTripFigure(f)} vs bare Fastify ${roundTripFigure(b)}: p50 ${ratio(0.5)}x, p99 ${ratio(0.99)}x`,
        `  RSS of run: ${rssAtLease.toFixed(0)} MB at the first lease, peak ${peak(served.rss).toFixed(0)} MB over the round trips`,
      ];
    } finally {
      await bare.close();
    }
  } finally {
    await served.stop();
  }
  const grown = logBytes(config) - logBefore;
  lines.push(
    `  the log grew ${(grown / 2 ** 20).toFixed(1)} MB over those ${leases} leases, ${(grown / leases / 1024).toFixed(0)} KiB a lease ` +
      '(rollout.batches records each lease, its items by qa id, for a week)',
  );
  return lines;
}

/** Bytes of the embedded log's files (the database and its WAL); 0 on Kafka. */
function logBytes(config: string): number {
  const log = loadConfig(config).log;
  if (!log.startsWith('file:')) return 0;
  const dir = log.slice('file:'.length);
  return readdirSync(dir)
    .filter((f) => f.startsWith('log.sqlite'))
    .reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
}

async function post(url: string, body: unknown): Promise<string> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${url} ${res.status}: ${text.slice(0, 500)}`);
  return text;
}

// ---- the dashboard -------------------------------------------------------------------------------

interface SnapshotFigures {
  readonly coldMs: number;
  readonly warmMs: number;
  readonly kib: number;
  readonly rss: readonly number[];
}

/** `bioalchemy dashboard` over a folder: the first snapshot, then SNAPSHOTS more, each gathered anew. */
async function snapshots(config: string): Promise<SnapshotFigures> {
  const served = serve(config, ['dashboard']);
  try {
    const url = (await served.line((l) => l.startsWith('http://'))).trim();
    const times: number[] = [];
    let kib = 0;
    for (let i = 0; i <= SNAPSHOTS; i++) {
      const started = performance.now();
      const res = await fetch(`${url}/api/snapshot?window=${WEEK}`);
      const text = await res.text();
      if (!res.ok) throw new Error(`dashboard snapshot ${res.status}: ${text.slice(0, 500)}`);
      times.push(performance.now() - started);
      kib = text.length / 1024;
      // Past the refresh, so that the next request gathers a snapshot rather than reading this one.
      await sleep(Math.max(0, started + REFRESH_MS + 10 - performance.now()));
    }
    return { coldMs: times[0]!, warmMs: median(times.slice(1)), kib, rss: [...served.rss] };
  } finally {
    await served.stop();
  }
}

async function dashboardFigures(config: string, emptyConfig: string): Promise<string[]> {
  const full = await snapshots(config);
  const empty = await snapshots(emptyConfig);
  return [
    `dashboard (bioalchemy dashboard), one snapshot of every panel over a week (${full.kib.toFixed(0)} KiB): ` +
      `${full.warmMs.toFixed(0)} ms (median of ${SNAPSHOTS}; the first ${full.coldMs.toFixed(0)} ms) ` +
      `vs an empty folder ${empty.warmMs.toFixed(0)} ms (first ${empty.coldMs.toFixed(0)} ms) = ${(full.warmMs / empty.warmMs).toFixed(2)}x`,
    `  peak RSS of dashboard: ${peak(full.rss).toFixed(0)} MB vs ${peak(empty.rss).toFixed(0)} MB on an empty folder`,
  ];
}

// ---- serving processes ---------------------------------------------------------------------------

const peak = (rss: readonly number[]) => Math.max(0, ...rss);

const CLI_ENV = { BENCH_LLM_KEY: 'k', BIOALCHEMY_LOG_LEVEL: 'info', BIOALCHEMY_FROM_SOURCE: '' };

function cliChild(config: string, args: string[]): ChildProcess {
  return spawn(process.execPath, ['--max-semi-space-size=64', BIN, ...args, '--config', config], {
    env: { ...process.env, ...CLI_ENV },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** RSS in MB of `pid` now, from /proc; NaN once it has exited. */
function rssOf(pid: number | undefined): number {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Number(kb) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** Samples the child's RSS every 250 ms into `rss` until it exits. */
function sampleRss(child: ChildProcess, rss: number[]): void {
  const timer = setInterval(() => {
    const mb = rssOf(child.pid);
    if (!Number.isNaN(mb)) rss.push(mb);
  }, 250);
  child.on('exit', () => clearInterval(timer));
}

/** A CLI command to its end: its time and RSS; a failure throws with its stderr. */
async function runToEnd(config: string, args: string[]): Promise<{ seconds: number; rss: number[] }> {
  const started = performance.now();
  const child = cliChild(config, args);
  const rss: number[] = [];
  sampleRss(child, rss);
  let stderr = '';
  child.stdout!.resume();
  child.stderr!.on('data', (c: Buffer) => {
    stderr = (stderr + c).slice(-20_000);
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`bioalchemy ${args.join(' ')} exited ${code}: ${stderr.slice(-2000)}`);
  return { seconds: (performance.now() - started) / 1000, rss };
}

interface Served {
  readonly rss: readonly number[];
  secondsSinceSpawn(): number;
  rssNow(): number;
  /** The first line of its stdout or stderr that `match` accepts; rejects if it exits first. */
  line(match: (line: string) => boolean): Promise<string>;
  /** SIGTERM, then its exit; a failure throws with its stderr. */
  stop(): Promise<void>;
}

/** A serving CLI command (run, dashboard) in a child, its output read line by line. */
function serve(config: string, args: string[]): Served {
  const started = performance.now();
  const child = cliChild(config, args);
  const rss: number[] = [];
  sampleRss(child, rss);
  const lines: string[] = [];
  const waiting: { match: (l: string) => boolean; resolve: (l: string) => void }[] = [];
  let stderr = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  for (const stream of [child.stdout!, child.stderr!]) {
    let partial = '';
    stream.on('data', (c: Buffer) => {
      if (stream === child.stderr) stderr = (stderr + c).slice(-20_000);
      const parts = (partial + c).split('\n');
      partial = parts.pop()!;
      for (const l of parts) {
        lines.push(l);
        for (const w of waiting.filter((w) => w.match(l))) {
          waiting.splice(waiting.indexOf(w), 1);
          w.resolve(l);
        }
      }
    });
  }
  const failed = (why: string) => new Error(`bioalchemy ${args.join(' ')} ${why}: ${stderr.slice(-2000)}`);
  return {
    rss,
    secondsSinceSpawn: () => (performance.now() - started) / 1000,
    rssNow: () => rssOf(child.pid),
    line(match) {
      const seen = lines.find(match);
      if (seen !== undefined) return Promise.resolve(seen);
      return Promise.race([
        new Promise<string>((resolve) => waiting.push({ match, resolve })),
        exited.then(({ code, signal }) => {
          throw failed(`exited (${code ?? signal}) before serving`);
        }),
      ]);
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const { code, signal } = await exited;
      if (code !== 0 && signal !== 'SIGTERM') throw failed(`stopped with ${code ?? signal}`);
    },
  };
}

// The sampler's child: its figures as the last line of stdout.
if (process.argv[1] === SELF && process.argv[2] === 'sampler') {
  process.stdout.write(`${JSON.stringify(await measureSampler(process.argv[3]!))}\n`);
}
