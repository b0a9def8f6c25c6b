import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import kafkajs from 'kafkajs';
import rdkafka from 'node-rdkafka';
import pino from 'pino';
import { RECORD_SCHEMAS } from '../schemas/index.js';
import { sampleArticle } from '../test/fixtures/records.js';
import { TopicCodecs } from '../topology/codec.js';
import { EngineMetrics } from '../topology/metrics.js';
import type { Processor } from '../topology/processor.js';
import { KafkaRuntime } from '../topology/runtime/kafka/index.js';
import { ProcessorTask } from '../topology/task.js';
import { defineTopology, type Topology } from '../topology/topology.js';
import { pairedRates, type Run, ratioLine, timed } from './harness.js';
import { rawRdkafkaConfig } from './raw-rdkafka-config.js';

const BROKER = process.env.BIOALCHEMY_KAFKA ?? '127.0.0.1:19092';
const N = 100_000;
/** Records per step (one poll), for the engine and for the raw baselines' consume calls alike. */
const BATCH = 5_000;
const PARTITIONS = 3;

/** How the one processor passes each record on. */
export type Mode = 'forward' | 'emit';
export type Client = 'kafkajs' | 'rdkafka';

/**
 * Pass-through. `forward` hands each input on unchanged (ctx.forward: the writer's validation
 * stands, nothing is parsed or serialised); `emit` reads the value and emits it as a new one
 * (parsed, validated and serialised again), the cost every transforming processor pays.
 */
const passThrough = (input: string, output: string, mode: Mode): Processor => ({
  name: `bench-${input}`,
  reads: [input],
  writes: [output],
  stores: [],
  batchSize: BATCH,
  async process(batch, ctx) {
    if (mode === 'forward') for (const r of batch) ctx.forward(r, output);
    else for (const r of batch) ctx.emit(output, r.key, r.value);
  },
});

/**
 * A fresh input topic holding N article records, written as an upstream step writes them
 * (validated and stamped), and an empty output topic.
 */
async function prepare(runtime: KafkaRuntime, mode: Mode = 'forward') {
  const id = randomUUID().slice(0, 8);
  const input = `bench-${id}-in`;
  const output = `bench-${id}-out`;
  const topology = defineTopology({
    topics: [
      { name: input, partitions: PARTITIONS, schema: 'article' },
      { name: output, partitions: PARTITIONS, schema: 'article' },
      { name: 'dlq', partitions: 1, schema: 'dead-letter' },
    ],
    processors: [passThrough(input, output, mode)],
  });
  await runtime.ensureTopics(topology.topics);
  const codecs = new TopicCodecs(topology);
  const records = Array.from({ length: N }, (_, i) => ({
    topic: input,
    key: `pmid:${i}`,
    value: codecs.encode(input, {
      ...sampleArticle,
      id: `pmid:${i}`,
      abstract: `Abstract number ${i}. `.repeat(20),
    }),
    validatedAs: codecs.stampOf(input),
  }));
  for (let i = 0; i < N; i += 5_000) await runtime.append(records.slice(i, i + 5_000));
  return { topology, input, output };
}

/**
 * Runs one measurement on its own runtime and its own topics, and deletes the topics after it, so
 * that a run pays nothing for the data of the runs before it.
 */
export async function onFreshTopics(
  client: Client,
  mode: Mode,
  measure: (runtime: KafkaRuntime, topics: Awaited<ReturnType<typeof prepare>>) => Promise<Run>,
): Promise<Run> {
  const runtime = await KafkaRuntime.open(`kafka://${BROKER}?client=${client}`);
  const topics: string[] = [];
  try {
    const prepared = await prepare(runtime, mode);
    topics.push(prepared.input, prepared.output);
    return await measure(runtime, prepared);
  } finally {
    await runtime.close();
    const admin = new kafkajs.Kafka({ brokers: [BROKER], logLevel: kafkajs.logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.deleteTopics({ topics: topics.map((t) => runtime.names.topic(t)) });
    await admin.disconnect();
  }
}

/**
 * Our runtime, as `run` drives it: steps of BATCH records go into transactions of up to 100 ms
 * (outputs and input offsets together), each commit overlapping the next step. Timing starts once
 * the first batch is committed, so joining the consumer group is not counted (the raw baselines likewise
 * start at their first batch); the rate is over the records after it.
 */
export async function throughEngine(
  runtime: KafkaRuntime,
  { topology }: { topology: Topology },
): Promise<Run> {
  const task = await new ProcessorTask(runtime, topology, topology.processors[0]!, {
    log: pino({ level: 'silent' }),
    metrics: new EngineMetrics(),
  }).open();
  const stop = new AbortController();
  const running = task.run(stop.signal);
  await until(() => task.committedInputs > 0);
  const first = task.committedInputs;
  const ms = await timed(() => until(() => task.committedInputs >= N));
  stop.abort();
  await running;
  await task.close();
  return { ms, records: N - first };
}

/** Resolves once `done` holds, checking every millisecond. */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 1));
}

/** What a raw copy does to each value: pass the bytes on, or emit's codec work on them. */
type ValueCopy = (value: Buffer | null) => Buffer | null;
const asIs: ValueCopy = (value) => value;
/**
 * The work emit cannot skip, with nothing else of the engine: parse, validate against the article
 * schema (zod), serialise. A raw copy doing it is the ceiling for any engine on that client.
 */
const article = RECORD_SCHEMAS.article;
const recoded: ValueCopy = (value) =>
  value && Buffer.from(JSON.stringify(article.parse(JSON.parse(value.toString('utf8')))), 'utf8');

/**
 * The same client with nothing of ours: consume the same records and produce them whole (key,
 * value and headers, so that it writes what the engine writes), with no transactions, parsing or
 * validation (with `recoded`, the value is parsed, validated and serialised again).
 */
export async function rawKafkajs(
  runtime: KafkaRuntime,
  topics: { input: string; output: string },
  copy: ValueCopy = asIs,
): Promise<Run> {
  // The same topics, by their names on Kafka (the app's prefix).
  const input = runtime.names.topic(topics.input);
  const output = runtime.names.topic(topics.output);
  const kafka = new kafkajs.Kafka({ brokers: [BROKER], logLevel: kafkajs.logLevel.NOTHING });
  const producer = kafka.producer({ idempotent: true });
  const consumer = kafka.consumer({ groupId: `raw-${input}`, maxWaitTimeInMs: 100 });
  await producer.connect();
  await consumer.connect();
  await consumer.subscribe({ topics: [input], fromBeginning: true });
  let moved = 0;
  let started = 0;
  let firstBatch = 0;
  const done = new Promise<number>((resolve) => {
    void consumer.run({
      partitionsConsumedConcurrently: PARTITIONS,
      eachBatch: async ({ batch }) => {
        await producer.send({
          topic: output,
          messages: batch.messages.map((m) => ({
            key: m.key,
            value: copy(m.value),
            headers: m.headers,
            partition: batch.partition,
          })),
        });
        moved += batch.messages.length;
        if (!started) {
          started = performance.now();
          firstBatch = moved;
        }
        if (moved >= N) resolve(performance.now() - started);
      },
    });
  });
  const ms = await done;
  await consumer.disconnect();
  await producer.disconnect();
  return { ms, records: N - firstBatch };
}

export async function rawRdkafka(
  runtime: KafkaRuntime,
  topics: { input: string; output: string },
  copy: ValueCopy = asIs,
): Promise<Run> {
  const input = runtime.names.topic(topics.input);
  const output = runtime.names.topic(topics.output);
  const config = rawRdkafkaConfig(BROKER, input);
  const producer = new rdkafka.Producer(config.producer);
  const consumer = new rdkafka.KafkaConsumer(config.consumer, config.consumerTopic);
  await new Promise((r) => producer.connect({}, r));
  await new Promise((r) => consumer.connect({}, r));
  consumer.subscribe([input]);
  consumer.setDefaultConsumeTimeout(500);
  let moved = 0;
  let started = 0;
  let firstBatch = 0;
  while (moved < N) {
    const messages = await new Promise<rdkafka.Message[]>((resolve, reject) =>
      consumer.consume(BATCH, (err, m) => (err ? reject(err) : resolve(m))),
    );
    for (const m of messages) {
      // node-rdkafka hands header values out as Buffers and takes them in as strings.
      const headers = m.headers?.map((h) =>
        Object.fromEntries(Object.entries(h).map(([k, v]) => [k, v.toString()])),
      );
      producer.produce(output, m.partition, copy(m.value), m.key, undefined, undefined, headers);
    }
    moved += messages.length;
    if (messages.length && !started) {
      started = performance.now();
      firstBatch = moved;
    }
  }
  await new Promise((r) => producer.flush(30_000, r));
  const ms = performance.now() - started;
  await new Promise((r) => consumer.disconnect(r));
  await new Promise((r) => producer.disconnect(r));
  return { ms, records: N - firstBatch };
}

/**
 * The raw copy with emit's codec work, the client on a worker thread: a process of its own
 * (bench/kafka-worker-copy.ts), since node-rdkafka's addon loads on one thread of a process only.
 */
async function rdkafkaOnWorker(
  runtime: KafkaRuntime,
  topics: { input: string; output: string },
): Promise<Run> {
  return childRun(process.execPath, [
    '--max-semi-space-size=64',
    '--import',
    'tsx',
    WORKER_COPY_SCRIPT,
    BROKER,
    runtime.names.topic(topics.input),
    runtime.names.topic(topics.output),
    String(N),
    String(BATCH),
  ]);
}

const WORKER_COPY_SCRIPT = fileURLToPath(new URL('./kafka-worker-copy.ts', import.meta.url));

const QUIX_VENV = fileURLToPath(new URL('../.deploy/quix-venv', import.meta.url));
const QUIX_PYTHON = `${QUIX_VENV}/bin/python`;
const QUIX_SCRIPT = fileURLToPath(new URL('./quix/run.py', import.meta.url));

/** The Quix Streams venv from PyPI, made on first use. */
function quixVenv(): void {
  if (existsSync(QUIX_PYTHON)) return;
  for (const [cmd, args] of [
    ['python3', ['-m', 'venv', QUIX_VENV]],
    [`${QUIX_VENV}/bin/pip`, ['install', '-q', 'quixstreams==3.28.1']],
  ] as const) {
    if (spawnSync(cmd, [...args], { stdio: 'inherit' }).status !== 0)
      throw new Error(`${cmd} ${args.join(' ')} failed`);
  }
}

/** The peer users would pick instead: Quix Streams on the same records (bench/quix/run.py). */
async function quix(runtime: KafkaRuntime, topics: { input: string; output: string }): Promise<Run> {
  return childRun(QUIX_PYTHON, [
    QUIX_SCRIPT,
    BROKER,
    runtime.names.topic(topics.input),
    runtime.names.topic(topics.output),
    String(N),
  ]);
}

/** A measurement run as a child process, which prints its Run as the last line of its output. */
async function childRun(command: string, args: string[]): Promise<Run> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`${command} ${args[0]} exited with ${code}`);
  return JSON.parse(out.trim().split('\n').at(-1)!) as Run;
}

export async function run(): Promise<string[]> {
  const lines: string[] = [];
  quixVenv();
  /** One line: `measure` and Quix Streams, runs interleaved on fresh topics holding the same records. */
  const againstQuix = async (
    client: Client,
    label: string,
    measure: Parameters<typeof onFreshTopics>[2],
    quixLabel = 'Quix Streams 3.28.1',
  ) => {
    const rates = await pairedRates(
      () => onFreshTopics(client, 'emit', measure),
      () => onFreshTopics(client, 'emit', quix),
      Number(process.env.BENCH_REPEATS ?? 3),
    );
    lines.push(ratioLine(label, rates.figure, quixLabel, rates.baseline));
  };
  for (const client of (process.env.BENCH_CLIENTS?.split(',') ?? ['rdkafka', 'kafkajs']) as Client[]) {
    // The transforming path (validation on).
    await againstQuix(
      client,
      `kafka/${client}, one processor (emit, validated), exactly-once`,
      throughEngine,
      'Quix Streams 3.28.1, exactly-once, commit interval 0.1 s',
    );
    // How far any engine on this client could go: the client alone copying the records with
    // emit's codec work, no transactions, no engine. The target is out of reach above this line.
    const raw = client === 'kafkajs' ? rawKafkajs : rawRdkafka;
    await againstQuix(
      client,
      `kafka/${client}, ceiling: raw ${client} consume+produce with parse, zod and serialise, no transactions`,
      (runtime, topics) => raw(runtime, topics, recoded),
    );
    // The same with node-rdkafka on a worker thread: how much the main thread's share of the
    // client costs, on a machine whose second core is otherwise half idle.
    if (client === 'rdkafka')
      await againstQuix(
        client,
        'kafka/rdkafka, the same copy with node-rdkafka on a worker thread, codec work on the main thread',
        rdkafkaOnWorker,
      );
  }
  if (process.env.BENCH_QUIX_ONLY) return lines;
  for (const client of ['kafkajs', 'rdkafka'] as const) {
    for (const mode of ['forward', 'emit'] as const) {
      const rates = await pairedRates(
        () => onFreshTopics(client, mode, throughEngine),
        () => onFreshTopics(client, mode, client === 'kafkajs' ? rawKafkajs : rawRdkafka),
        5,
      );
      lines.push(
        ratioLine(
          `kafka/${client}, one processor (${mode}), exactly-once, batch ${BATCH}`,
          rates.figure,
          `raw ${client} consume+produce`,
          rates.baseline,
        ),
      );
    }
  }
  return lines;
}
