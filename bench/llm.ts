import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { createInterface } from 'node:readline';
import OpenAI from 'openai';
import { pino } from 'pino';
import { z } from 'zod';
import { replyJsonSchema } from '../llm/json-schema.js';
import { Llm } from '../llm/llm.js';
import { httpFetch } from '../llm/providers/http-fetch.js';
import { LlmConfig } from '../schemas/llm.js';
import type { Stats } from '../test/llm-server/server.js';

/**
 * The LLM layer against the test server (its own process, so this one's CPU is the client's):
 * - throughput at C = 64 calls in flight vs the ideal C / L, for L fixed at 200 ms and for a
 *   log-normal L (median 200 ms, p99 2 s), L being the mean of the delays the server served;
 *   after a warm-up (connections open, code compiled), runs through the layer and through the
 *   bare openai client interleaved against one server, medians reported;
 * - the same workload through bespoke curator (bench/curator/run.py, Python, PyPI
 *   bespokelabs-curator, from the venv .deploy/bench-venv) against the same server, as a ratio;
 * - the layer's own CPU per call at zero latency (flow control, journal, accounting, validation),
 *   as process CPU per call through the layer minus the same through the bare openai client on
 *   the layer's transport; and the bare client on Node's built-in fetch, for scale. User CPU is
 *   the layer's code; system CPU is mostly loopback TCP, where a write also pays for the server's
 *   receive and wake-up, so it moves with how busy the server is rather than with the layer.
 */
const C = 64;
const KEY_ENV = 'BIOALCHEMY_BENCH_LLM_KEY';
const Reply = z.object({
  relevant: z.boolean(),
  reason: z.string().max(40),
  score: z.number().min(0).max(1),
});
const messages = (i: number) => [
  { role: 'system' as const, content: 'Is the passage relevant to biology? Answer in JSON.' },
  {
    role: 'user' as const,
    content: `Passage ${i}: the Krebs cycle oxidises acetyl-CoA in the mitochondrial matrix.`,
  },
];

interface Server {
  url: string;
  stats(): Promise<Stats>;
  resetStats(): Promise<void>;
  stop(): Promise<void>;
}

async function server(args: string[]): Promise<Server> {
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', 'test/llm-server/main.ts', '--port', '0', ...args],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const [url] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
  const root = url.replace(/\/v1$/, '');
  return {
    url,
    stats: async () => (await fetch(`${root}/stats`)).json() as Promise<Stats>,
    resetStats: async () => {
      await fetch(`${root}/control`, { method: 'POST', body: JSON.stringify({ resetStats: true }) });
    },
    stop: async () => {
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/** The layer as a user configures it (replies streamed), or asking for whole replies. */
function layer(url: string, promptVersion: string, stream = true) {
  const llm = new Llm(
    LlmConfig.parse({
      provider: 'openai',
      baseUrl: url,
      model: 'bench',
      apiKeyEnv: KEY_ENV,
      concurrency: C,
      stream,
    }),
    { log: pino({ level: 'silent' }), env: { [KEY_ENV]: 'bench' } },
  );
  return {
    llm,
    call: (i: number) =>
      llm.complete({ stage: 'relevance', messages: messages(i), schema: Reply, promptVersion }),
  };
}

/**
 * A bare openai client with the layer's request, for the baselines: on the layer's transport
 * (pooled node:http connections), or on Node's built-in fetch (the client's default).
 */
function bareClient(url: string, transport: 'layer' | 'builtin' = 'layer') {
  const http = transport === 'layer' ? httpFetch() : undefined;
  const client = new OpenAI({ baseURL: url, apiKey: 'bench', maxRetries: 0, fetch: http?.fetch });
  const schema = replyJsonSchema(Reply);
  const call = async (i: number) => {
    const c = await client.chat.completions.create({
      model: 'bench',
      messages: messages(i),
      response_format: { type: 'json_schema', json_schema: { name: 'relevance', schema, strict: true } },
    });
    return JSON.parse(c.choices[0]!.message.content!);
  };
  return { call, close: () => http?.close() };
}

/**
 * The same request over node:http alone (keep-alive, no openai client, no layer): what the server
 * and the machine allow at the moment, the ceiling the other clients are read against.
 */
function rawClient(url: string) {
  const agent = new http.Agent({ keepAlive: true });
  const target = new URL(`${url}/chat/completions`);
  const schema = replyJsonSchema(Reply);
  const call = (i: number) =>
    new Promise<unknown>((resolve, reject) => {
      const body = JSON.stringify({
        model: 'bench',
        messages: messages(i),
        response_format: { type: 'json_schema', json_schema: { name: 'relevance', schema, strict: true } },
      });
      const req = http.request(
        target,
        {
          agent,
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            authorization: 'Bearer bench',
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const reply = JSON.parse(Buffer.concat(chunks).toString()) as {
              choices: { message: { content: string } }[];
            };
            resolve(JSON.parse(reply.choices[0]!.message.content));
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  return { call, close: () => agent.destroy() };
}

/**
 * n calls, C in flight (`all`: submitted at once, for the layer and its concurrency limit C;
 * `workers`: C workers, for the bare clients), numbered from `first` so no call repeats an earlier
 * one. Completions per second in steady state: the n - 2C completions after the C-th up to the
 * (n - C)-th, over the time between those two. The first C (connections opening, the layer taking
 * in all n calls at once) and the last C (fewer than C left in flight) are left out alike for
 * every client, curator included; at a fixed latency L the window is a whole number of rounds
 * of C calls, so the ideal is exactly C / L.
 */
async function saturated(
  call: (i: number) => Promise<unknown>,
  n: number,
  first: number,
  submit: 'all' | 'workers',
): Promise<number> {
  const done: number[] = [];
  if (submit === 'all') {
    await Promise.all(
      Array.from({ length: n }, (_, i) => call(first + i).then(() => done.push(performance.now()))),
    );
  } else {
    let next = 0;
    const worker = async () => {
      while (next < n) await call(first + next++).then(() => done.push(performance.now()));
    };
    await Promise.all(Array.from({ length: C }, worker));
  }
  done.sort((a, b) => a - b);
  return (n - 2 * C) / ((done[n - C - 1]! - done[C - 1]!) / 1000);
}

interface Throughput {
  layer: number;
  bare: number;
  raw: number;
  curator?: { achieved: number; wall_s: number };
  /** Why curator was not measured. */
  curatorSkipped?: string;
  /** C over the mean delay the server served. */
  ideal: number;
}

const VENV_PYTHON = '.deploy/bench-venv/bin/python';

/** bench/curator/run.py against `url`: its achieved rate, or why it could not run. */
async function curator(
  url: string,
  n: number,
  first: number,
): Promise<{ achieved: number; wall_s: number } | string> {
  if (!existsSync(VENV_PYTHON)) {
    return `no ${VENV_PYTHON}: python3 -m venv .deploy/bench-venv && .deploy/bench-venv/bin/pip install -r bench/curator/requirements.txt`;
  }
  const child = spawn(
    VENV_PYTHON,
    [
      'bench/curator/run.py',
      '--url',
      url,
      '--n',
      String(n),
      '--concurrency',
      String(C),
      '--offset',
      String(first),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d;
  });
  child.stderr!.on('data', (d: Buffer) => {
    err += d;
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  const result = out.split('\n').find((l) => l.startsWith('CURATOR_RESULT '));
  if (code !== 0 || !result) {
    const why = `${err}\n${out}`.trim().split('\n').slice(-3).join(' | ');
    return `bench/curator/run.py exited ${code}: ${why}`;
  }
  return JSON.parse(result.slice('CURATOR_RESULT '.length)) as { achieved: number; wall_s: number };
}

/**
 * One server with `args`; the layer and the bare and raw clients warmed up, then `rounds`
 * interleaved measured runs of n calls each (layer, bare, raw, layer, ...), then curator's run of n.
 */
async function throughput(args: string[], n: number, rounds: number): Promise<Throughput> {
  const srv = await server(args);
  const { llm, call } = layer(srv.url, 'throughput');
  const bare = bareClient(srv.url);
  const raw = rawClient(srv.url);
  try {
    let first = 0;
    const next = (k: number) => {
      first += k;
      return first - k;
    };
    await saturated(call, 3 * C, next(3 * C), 'all');
    await saturated(bare.call, 3 * C, next(3 * C), 'workers');
    await saturated(raw.call, 3 * C, next(3 * C), 'workers');
    await srv.resetStats();
    const layers: number[] = [];
    const bares: number[] = [];
    const raws: number[] = [];
    for (let r = 0; r < rounds; r++) {
      layers.push(await saturated(call, n, next(n), 'all'));
      bares.push(await saturated(bare.call, n, next(n), 'workers'));
      raws.push(await saturated(raw.call, n, next(n), 'workers'));
    }
    const stats = await srv.stats();
    const ideal = C / (stats.latencySumMs / stats.answered / 1000);
    const viaCurator = await curator(srv.url, n, next(n));
    return {
      layer: median(layers),
      bare: median(bares),
      raw: median(raws),
      ideal,
      ...(typeof viaCurator === 'string' ? { curatorSkipped: viaCurator } : { curator: viaCurator }),
    };
  } finally {
    await llm.close();
    bare.close();
    raw.close();
    await srv.stop();
  }
}

/** Process CPU microseconds per call (user, and user + system), `n` calls with C in flight. */
async function cpuPerCall(n: number, call: (i: number) => Promise<unknown>): Promise<Cpu> {
  let next = 0;
  const worker = async () => {
    while (next < n) await call(next++);
  };
  const before = process.cpuUsage();
  await Promise.all(Array.from({ length: C }, worker));
  const used = process.cpuUsage(before);
  return { user: used.user / n, total: (used.user + used.system) / n };
}

interface Cpu {
  user: number;
  total: number;
}

export async function cpuCost(
  n: number,
  rounds: number,
): Promise<{ layer: Cpu; whole: Cpu; bare: Cpu; builtin: Cpu }> {
  const srv = await server(['--latency-ms', '0']);
  const { llm, call } = layer(srv.url, 'cpu');
  const whole = layer(srv.url, 'cpu-whole', false);
  const bare = bareClient(srv.url);
  const builtin = bareClient(srv.url, 'builtin');
  try {
    const runs = { layer: [] as Cpu[], whole: [] as Cpu[], bare: [] as Cpu[], builtin: [] as Cpu[] };
    // Warm every path before measuring; every call through the layer a new passage, so none is
    // a journal hit.
    const warm = 1_000_000;
    await cpuPerCall(500, (i) => call(warm + i));
    await cpuPerCall(500, (i) => whole.call(warm + i));
    await cpuPerCall(500, bare.call);
    await cpuPerCall(500, builtin.call);
    for (let round = 0; round < rounds; round++) {
      runs.layer.push(await cpuPerCall(n, (i) => call(n * round + i)));
      runs.whole.push(await cpuPerCall(n, (i) => whole.call(n * round + i)));
      runs.bare.push(await cpuPerCall(n, (i) => bare.call(n * round + i)));
      runs.builtin.push(await cpuPerCall(n, (i) => builtin.call(n * round + i)));
    }
    const med = (xs: Cpu[]) => ({
      user: median(xs.map((x) => x.user)),
      total: median(xs.map((x) => x.total)),
    });
    return {
      layer: med(runs.layer),
      whole: med(runs.whole),
      bare: med(runs.bare),
      builtin: med(runs.builtin),
    };
  } finally {
    await llm.close();
    await whole.llm.close();
    bare.close();
    await srv.stop();
  }
}

/**
 * Process CPU per call over the first and the last tenth of one long run through one layer (C in
 * flight, every call a new passage): what a per-call cost that grows with history would show.
 */
async function cpuDrift(calls: number): Promise<{ calls: number; first: number; last: number }> {
  const srv = await server(['--latency-ms', '0']);
  const { llm, call } = layer(srv.url, 'drift');
  try {
    // Warm (code compiled, connections open) before the first tenth is measured.
    await cpuPerCall(2000, (i) => call(calls + i));
    const tenth = calls / 10;
    const tenths: number[] = [];
    for (let t = 0; t < 10; t++) {
      const cpu = await cpuPerCall(tenth, (i) => call(t * tenth + i));
      tenths.push(cpu.total);
    }
    return { calls, first: tenths[0]!, last: tenths[9]! };
  } finally {
    await llm.close();
    await srv.stop();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const vsIdeal = (rate: number, ideal: number) =>
  `${rate.toFixed(1)} calls/s = ${(rate / ideal).toFixed(3)} of ideal`;

const loadavg = () => {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {
    return 'unknown';
  }
};

export async function run(): Promise<string[]> {
  const lines: string[] = [`machine load (1, 5, 15 min) at start: ${loadavg()}`];
  for (const [label, args, n, rounds] of [
    // 64 decoding slots (llama-server --parallel 64): the adaptive limit finds them by itself.
    ['fixed 200 ms, 64 slots', ['--latency-ms', '200', '--slots', String(C)], C * 30, 3],
    ['log-normal median 200 ms, p99 2 s', ['--median-ms', '200', '--p99-ms', '2000'], C * 60, 1],
  ] as const) {
    const t = await throughput([...args], n, rounds);
    lines.push(
      `throughput, C=${C}, latency ${label}, ${n} calls x ${rounds}: ideal C/L ${t.ideal.toFixed(1)} calls/s; layer ${vsIdeal(t.layer, t.ideal)} (target >= 0.95); bare openai client ${vsIdeal(t.bare, t.ideal)}; raw node:http ${vsIdeal(t.raw, t.ideal)}`,
      t.curator !== undefined
        ? `  curator (bespokelabs-curator, same server, ${n} calls): ${vsIdeal(t.curator.achieved, t.ideal)}; layer / curator = ${(t.layer / t.curator.achieved).toFixed(2)}x (curator's whole run, set-up and dataset included: ${t.curator.wall_s.toFixed(1)} s)`
        : `  curator skipped: ${t.curatorSkipped}`,
    );
  }
  const drift = await cpuDrift(10_000);
  lines.push(
    `CPU per call through the layer over a run of ${drift.calls} calls at zero latency: first tenth ${drift.first.toFixed(0)} us, last tenth ${drift.last.toFixed(0)} us (${(drift.last / drift.first).toFixed(2)}x; a cost that grows with the calls made shows here)`,
  );
  const cpu = await cpuCost(2000, 5);
  const us = (x: number) => `${x.toFixed(0)} us`;
  lines.push(
    `CPU per call at zero latency, user (user + system): through the layer ${us(cpu.layer.user)} (${us(cpu.layer.total)}), asking for whole replies ${us(cpu.whole.user)} (${us(cpu.whole.total)}), vs bare openai client on the same transport ${us(cpu.bare.user)} (${us(cpu.bare.total)}) = the layer's own ${us(cpu.layer.user - cpu.bare.user)} (${us(cpu.layer.total - cpu.bare.total)}); bare openai client on the built-in fetch ${us(cpu.builtin.user)} (${us(cpu.builtin.total)})`,
    `machine load (1, 5, 15 min) at end: ${loadavg()}`,
  );
  return lines;
}
