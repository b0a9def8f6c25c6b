import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { sampleArticle } from '../test/fixtures/records.js';
import { TopicCodecs } from '../topology/codec.js';
import type { Processor } from '../topology/processor.js';
import { partitionKey } from '../topology/records.js';
import { KafkaRuntime } from '../topology/runtime/kafka/index.js';
import { defineTopology, type Topology } from '../topology/topology.js';
import { fmt } from './harness.js';

const BROKER = process.env.BIOALCHEMY_KAFKA ?? '127.0.0.1:19092';
const PARTITIONS = 6;
/** Article records through 1, 2 and 3 workers. */
const N = 60_000;
/** Keys in the store whose restore is timed. */
const KEYS = 100_000;
const WORKER = fileURLToPath(new URL('./scale-worker.ts', import.meta.url));

/**
 * The bench processor: reads an article, emits it again (parsed, validated, serialised: the
 * transforming path) and keeps one state key per article (its title's length), so a worker's
 * state grows with its partitions' input and a move has something to restore.
 */
function transform(input: string, output: string): Processor {
  return {
    name: `scale-${input}`,
    reads: [input],
    writes: [output],
    stores: ['seen'],
    batchSize: 2_000,
    async process(batch, ctx) {
      const seen = ctx.store('seen');
      for (const r of batch) {
        const a = r.value as { id: string; title: string };
        ctx.emit(output, r.key, r.value);
        seen.put(a.id, a.title.length);
      }
    },
  };
}

export function scaleBenchTopology(prefix: string): Topology {
  const input = `${prefix}.in`;
  const output = `${prefix}.out`;
  return defineTopology({
    topics: [
      { name: input, partitions: PARTITIONS, schema: 'article' },
      { name: output, partitions: PARTITIONS, schema: 'article' },
      { name: 'dlq', partitions: 1, schema: 'dead-letter' },
    ],
    processors: [transform(input, output)],
  });
}

class Worker {
  readonly lines: Record<string, unknown>[] = [];
  readonly child: ChildProcess;
  readonly exited: Promise<void>;

  constructor(url: string, prefix: string, id: string) {
    this.child = spawn(process.execPath, ['--import', 'tsx', WORKER, url, prefix, id], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let rest = '';
    this.child.stdout!.on('data', (chunk: Buffer) => {
      const parts = (rest + chunk.toString()).split('\n');
      rest = parts.pop()!;
      for (const line of parts) if (line.trim()) this.lines.push(JSON.parse(line));
    });
    this.exited = new Promise((resolve) => this.child.on('exit', () => resolve()));
  }

  last(msg: string): Record<string, unknown> | undefined {
    return this.lines.filter((l) => l.msg === msg).at(-1);
  }

  async stop(): Promise<void> {
    this.child.kill('SIGTERM');
    await this.exited;
  }
}

async function until(what: string, check: () => Promise<boolean> | boolean, ms = 180_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function fill(runtime: KafkaRuntime, topology: Topology, count: number): Promise<void> {
  const input = topology.processors[0]!.reads[0]!;
  await runtime.ensureTopics(topology.topics);
  const codecs = new TopicCodecs(topology);
  const stamp = codecs.stampOf(input);
  // A topic created a moment ago may not have its leader known to every broker connection yet.
  await until('the input writable', async () => (await runtime.endOffsets(input).catch(() => [])).length > 0);
  for (let i = 0; i < count; i += 5_000) {
    await runtime.append(
      Array.from({ length: Math.min(5_000, count - i) }, (_, j) => ({
        topic: input,
        key: `pmid:${i + j}`,
        value: codecs.encode(input, {
          ...sampleArticle,
          id: `pmid:${i + j}`,
          abstract: `Abstract ${i + j}.`,
        }),
        validatedAs: stamp,
      })),
    );
  }
}

/** Whether the group has committed every input partition to its end. */
async function caughtUp(runtime: KafkaRuntime, group: string, topic: string): Promise<boolean> {
  return caughtUpOnce(runtime, group, topic).catch(() => false);
}

async function caughtUpOnce(runtime: KafkaRuntime, group: string, topic: string): Promise<boolean> {
  const committed = await runtime.committedOffsets(group, [topic]).catch(() => new Map<string, number>());
  return (await runtime.endOffsets(topic)).every(
    (end, p) => (committed.get(partitionKey(topic, p)) ?? 0) >= end,
  );
}

/** K workers over N records: records/s from "go" until all is committed, and each worker's CPU. */
async function throughput(client: string, k: number): Promise<string> {
  const url = `kafka://${BROKER}?client=${client}&app=bench`;
  const prefix = `scale-${randomUUID().slice(0, 8)}`;
  const topology = scaleBenchTopology(prefix);
  const p = topology.processors[0]!;
  const runtime = await KafkaRuntime.open(url);
  try {
    await runtime.ensureTopics(topology.topics);
    // The workers join on an empty input and settle; then the input is written (faster than it
    // is processed) and the clock runs from its first record to the last commit.
    const workers = Array.from({ length: k }, (_, i) => new Worker(url, prefix, `w${i + 1}`));
    await until('the group settles', () =>
      workers.every(
        (w) => (w.last('assignment')?.partitions as number[] | undefined)?.length === PARTITIONS / k,
      ),
    );
    const started = performance.now();
    await fill(runtime, topology, N);
    await until('all committed', () => caughtUp(runtime, p.name, p.reads[0]!));
    const seconds = (performance.now() - started) / 1000;
    await Promise.all(workers.map((w) => w.stop()));
    const cpu = workers.map((w) => Number(w.last('cpu')?.cpuMs ?? 0) / 1000 / seconds);
    return `kafka-scale/${client}, ${k} worker${k > 1 ? 's' : ''}, ${PARTITIONS} partitions, ${fmt(N)} articles (emit + state; written as read): ${fmt(N / seconds)} records/s; CPU per worker ${cpu.map((c) => `${Math.round(c * 100)}%`).join(' ')} of a core`;
  } finally {
    await runtime.deleteApp().catch(() => {});
    await runtime.close();
  }
}

/** One worker fills a store of KEYS keys; a fresh worker then takes every partition over: its restore time. */
async function restore(client: string): Promise<string> {
  const url = `kafka://${BROKER}?client=${client}&app=bench`;
  const prefix = `restore-${randomUUID().slice(0, 8)}`;
  const topology = scaleBenchTopology(prefix);
  const p = topology.processors[0]!;
  const runtime = await KafkaRuntime.open(url);
  try {
    await fill(runtime, topology, KEYS);
    const first = new Worker(url, prefix, 'first');
    await until('the store filled', () => caughtUp(runtime, p.name, p.reads[0]!));
    await first.stop();
    const second = new Worker(url, prefix, 'second');
    await until('restored', () => {
      const r = second.lines.filter(
        (l) => l.msg === 'partitions assigned, state restored' || l.msg === 'state restored',
      );
      return new Set(r.flatMap((l) => l.partitions as number[])).size === PARTITIONS;
    });
    const restores = second.lines.filter(
      (l) => l.msg === 'partitions assigned, state restored' || l.msg === 'state restored',
    );
    const keys = restores.reduce((n, l) => n + Number(l.keys), 0);
    const records = restores.reduce((n, l) => n + Number(l.records), 0);
    // rdkafka restores its partitions in one go; kafkajs one per partition, side by side: the longest.
    const ms =
      client === 'rdkafka'
        ? restores.reduce((n, l) => n + Number(l.ms), 0)
        : Math.max(...restores.map((l) => Number(l.ms)));
    await second.stop();
    return `kafka-scale/${client}, restore after a rebalance: ${fmt(keys)} keys (${fmt(records)} changelog records, ${PARTITIONS} partitions) in ${fmt(ms)} ms = ${fmt(keys / (ms / 1000))} keys/s`;
  } finally {
    await runtime.deleteApp().catch(() => {});
    await runtime.close();
  }
}

export async function run(): Promise<string[]> {
  const lines: string[] = [];
  for (const client of ['rdkafka', 'kafkajs'] as const) {
    for (const k of [1, 2, 3]) lines.push(await throughput(client, k));
    lines.push(await restore(client));
  }
  return lines;
}
