import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import OpenAI from 'openai';
import { pino } from 'pino';
import { z } from 'zod';
import { replyJsonSchema } from '../llm/json-schema.js';
import { Llm } from '../llm/llm.js';
import { LlmConfig } from '../schemas/llm.js';
import type { Stats } from '../test/llm-server/server.js';

/**
 * The LLM layer against the test server (its own process, so this one's CPU is the client's):
 * - throughput at C = 64 calls in flight vs the ideal C / L, for L fixed at 200 ms and for a
 *   log-normal L (median 200 ms, p99 2 s), L being the mean of the delays the server served;
 * - the layer's own CPU per call at zero latency (flow control, journal, accounting, validation),
 *   as process CPU per call through the layer minus the same through the bare openai client.
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
    stop: async () => {
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

function layer(url: string, promptVersion: string) {
  const llm = new Llm(
    LlmConfig.parse({ provider: 'openai', baseUrl: url, model: 'bench', apiKeyEnv: KEY_ENV, concurrency: C }),
    { log: pino({ level: 'silent' }), env: { [KEY_ENV]: 'bench' } },
  );
  return {
    llm,
    call: (i: number) =>
      llm.complete({ stage: 'relevance', messages: messages(i), schema: Reply, promptVersion }),
  };
}

/** A bare openai client with the layer's request, for the baselines. */
function bareClient(url: string) {
  const client = new OpenAI({ baseURL: url, apiKey: 'bench', maxRetries: 0 });
  const schema = replyJsonSchema(Reply);
  return async (i: number) => {
    const c = await client.chat.completions.create({
      model: 'bench',
      messages: messages(i),
      response_format: { type: 'json_schema', json_schema: { name: 'relevance', schema, strict: true } },
    });
    return JSON.parse(c.choices[0]!.message.content!);
  };
}

/**
 * Completions per second while saturated (up to the moment only C calls remained), n calls through
 * the layer (all submitted at once, its concurrency limit C) or through C workers on the bare client.
 */
async function throughput(
  args: string[],
  n: number,
  via: 'layer' | 'bare',
): Promise<{ achieved: number; ideal: number }> {
  const srv = await server(args);
  try {
    const done: number[] = [];
    const started = performance.now();
    if (via === 'layer') {
      const { llm, call } = layer(srv.url, 'throughput');
      await Promise.all(
        Array.from({ length: n }, (_, i) => call(i).then(() => done.push(performance.now()))),
      );
      await llm.close();
    } else {
      const call = bareClient(srv.url);
      let next = 0;
      const worker = async () => {
        while (next < n) await call(next++).then(() => done.push(performance.now()));
      };
      await Promise.all(Array.from({ length: C }, worker));
    }
    done.sort((a, b) => a - b);
    const stats = await srv.stats();
    const meanMs = stats.latencySumMs / stats.answered;
    return { achieved: (n - C) / ((done[n - C - 1]! - started) / 1000), ideal: C / (meanMs / 1000) };
  } finally {
    await srv.stop();
  }
}

/** Process CPU microseconds per call, `n` calls with C in flight. */
async function cpuPerCall(n: number, call: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const worker = async () => {
    while (next < n) await call(next++);
  };
  const before = process.cpuUsage();
  await Promise.all(Array.from({ length: C }, worker));
  const used = process.cpuUsage(before);
  return (used.user + used.system) / n;
}

async function cpuCost(n: number, rounds: number): Promise<{ layer: number; bare: number }> {
  const srv = await server(['--latency-ms', '0']);
  try {
    const bare = bareClient(srv.url);
    const layers: number[] = [];
    const bares: number[] = [];
    await cpuPerCall(500, bare); // warm both paths before measuring
    await cpuPerCall(500, layer(srv.url, 'warm').call);
    for (let round = 0; round < rounds; round++) {
      // Each round a fresh prompt version, so no call is a journal hit.
      const { llm, call } = layer(srv.url, `cpu-${round}`);
      layers.push(await cpuPerCall(n, (i) => call(i)));
      await llm.close();
      bares.push(await cpuPerCall(n, (i) => bare(n * round + i)));
    }
    return { layer: median(layers), bare: median(bares) };
  } finally {
    await srv.stop();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const ratio = (r: { achieved: number; ideal: number }) =>
  `${r.achieved.toFixed(1)} calls/s vs ideal C/L ${r.ideal.toFixed(1)} = ${(r.achieved / r.ideal).toFixed(3)}`;

export async function run(): Promise<string[]> {
  const lines: string[] = [];
  for (const [label, args, n] of [
    ['fixed 200 ms', ['--latency-ms', '200'], C * 40],
    ['log-normal median 200 ms, p99 2 s', ['--median-ms', '200', '--p99-ms', '2000'], C * 60],
  ] as const) {
    const viaLayer = await throughput([...args], n, 'layer');
    const bare = await throughput([...args], n, 'bare');
    lines.push(
      `throughput, C=${C}, latency ${label}: layer ${ratio(viaLayer)} (target >= 0.95); bare openai client ${ratio(bare)}`,
    );
  }
  const { layer: withLayer, bare } = await cpuCost(2000, 3);
  lines.push(
    `CPU per call at zero latency: ${withLayer.toFixed(0)} us through the layer vs ${bare.toFixed(0)} us bare openai client = ${(withLayer - bare).toFixed(0)} us the layer's own`,
  );
  return lines;
}
