import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TopicCodecs } from '../../topology/codec.js';
import { EngineMetrics } from '../../topology/metrics.js';
import type { Processor } from '../../topology/processor.js';
import { partitionForKey } from '../../topology/records.js';
import { updateLag } from '../../topology/runner.js';
import type { Runtime } from '../../topology/runtime/types.js';
import { ProcessorTask } from '../../topology/task.js';
import { defineTopology, type TopicSpec, type Topology } from '../../topology/topology.js';
import { sampleArticle } from '../fixtures/records.js';
import { conformanceTopology, doubler, windowedDoubler } from './processors.js';

/** How a runtime under test is opened; each test gets fresh topic names from prefix(). */
export interface Harness {
  /** A log URL a child process can open (file:DIR, kafka://...). */
  url(): string;
  open(): Promise<Runtime>;
  prefix(): string;
  /** kill -9 rounds in the exactly-once test. */
  kills: number;
}

const silent = pino({ level: 'silent' });

export async function readAll(
  runtime: Runtime,
  topic: string,
): Promise<{ key: string | null; value: unknown; partition: number; offset: number }[]> {
  const out = [];
  for (const [partition, end] of (await runtime.endOffsets(topic)).entries()) {
    for (let from = 0; from < end; ) {
      const rows = await runtime.read(topic, partition, from, 1000);
      if (!rows.length) break;
      for (const r of rows) out.push({ key: r.key, value: JSON.parse(r.value), partition, offset: r.offset });
      from = rows[rows.length - 1]!.offset + 1;
    }
  }
  return out;
}

export async function task(
  runtime: Runtime,
  topology: Topology,
  p: Processor,
  batchSize = 64,
): Promise<ProcessorTask> {
  return new ProcessorTask(runtime, topology, p, {
    log: silent,
    metrics: new EngineMetrics(),
    batchSize,
    backoffMs: () => 1,
  }).open();
}

/**
 * Steps the task until it has committed at least `n` input records; how many it committed (a poll
 * takes what has arrived, so the last step may take more).
 */
export async function stepUntil(t: ProcessorTask, n: number, deadlineMs = 30_000): Promise<number> {
  const deadline = Date.now() + deadlineMs;
  let done = 0;
  while (done < n) {
    if (Date.now() > deadline) throw new Error(`only ${done} of ${n} records processed before the deadline`);
    done += await t.step(100);
  }
  return done;
}

/** Drives the task with run(), as `bioalchemy run` does, until `n` inputs are committed; then stops and closes it. */
async function runUntilCommitted(t: ProcessorTask, n: number, deadlineMs = 30_000): Promise<void> {
  const stop = new AbortController();
  const running = t.run(stop.signal);
  const deadline = Date.now() + deadlineMs;
  while (t.committedInputs < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  stop.abort();
  await running;
  await t.close();
}

/**
 * The doubler's counter summed over its scopes: its store is per input partition, so each
 * partition counts its own inputs.
 */
export async function countTotal(runtime: Runtime, p: Processor): Promise<number> {
  const rows = await runtime.readStore(p.name, 'count');
  return rows.filter((r) => r.key === 'total').reduce((sum, r) => sum + Number(JSON.parse(r.value)), 0);
}

const numbers = (topic: string, from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => ({
    topic,
    key: String(from + i),
    value: JSON.stringify({ n: from + i }),
  }));

/** The runtime conformance suite: every runtime must pass it unchanged. */
export function runtimeConformance(label: string, harness: Harness): void {
  describe(`runtime conformance: ${label}`, () => {
    let runtime: Runtime;
    let prefix: string;
    beforeEach(async () => {
      runtime = await harness.open();
      prefix = harness.prefix();
    });
    afterEach(async () => {
      await runtime.close();
    });

    it('keeps order within a partition and places keys by murmur2 hash', async () => {
      const topology = conformanceTopology(prefix, () => []);
      await runtime.ensureTopics(topology.topics);
      const input = `${prefix}.in`;
      const records = Array.from({ length: 120 }, (_, i) => ({
        topic: input,
        key: `k${i % 10}`,
        value: JSON.stringify({ i }),
      }));
      await runtime.append(records.slice(0, 60));
      await runtime.append(records.slice(60));
      const all = await readAll(runtime, input);
      expect(all).toHaveLength(120);
      for (const r of all) expect(r.partition).toBe(partitionForKey(r.key!, 3));
      for (let k = 0; k < 10; k++) {
        const seq = all.filter((r) => r.key === `k${k}`).map((r) => (r.value as { i: number }).i);
        expect(seq).toEqual([...seq].sort((a, b) => a - b));
        expect(seq).toHaveLength(12);
      }
      const ends = await runtime.endOffsets(input);
      expect(ends.reduce((a, b) => a + b, 0)).toBe(120);
    });

    it("grows only a cache topic's partitions, dropping what it held; refuses any other change of count", async () => {
      const spec = (name: string, partitions: number, cache: boolean): TopicSpec => ({
        name: `${prefix}.${name}`,
        partitions,
        compacted: true,
        cache,
        retentionMs: null,
        schema: null,
        description: '',
      });
      await runtime.ensureTopics([spec('cache', 1, true), spec('store', 1, false)]);
      await runtime.append([
        { topic: `${prefix}.cache`, key: 'a', value: '{"v":1}' },
        { topic: `${prefix}.cache`, key: 'b', value: '{"v":2}' },
        { topic: `${prefix}.store`, key: 'a', value: '{"v":1}' },
      ]);
      // A store's keys would move to other partitions, away from their state: refused, saying why.
      await expect(runtime.ensureTopics([spec('store', 4, false)])).rejects.toThrow(
        /exists with 1 partitions.*the topology wants 4.*only a cache topic's may grow/,
      );
      await runtime.ensureTopics([spec('cache', 4, true)]);
      expect(await runtime.endOffsets(`${prefix}.cache`)).toHaveLength(4);
      const latest = new Map((await readAll(runtime, `${prefix}.cache`)).map((r) => [r.key, r.value]));
      expect([...latest]).toEqual([
        ['a', null],
        ['b', null],
      ]);
      // Grown, it takes records in its new partitions, and is left as it is at the next start.
      await runtime.append([{ topic: `${prefix}.cache`, key: 'c', value: '{"v":3}', partition: 3 }]);
      await runtime.ensureTopics([spec('cache', 4, true)]);
      expect((await runtime.read(`${prefix}.cache`, 3, 0, 10)).map((r) => r.key)).toEqual(['c']);
      // Fewer partitions would leave records where no reader looks: refused, cache or not.
      await expect(runtime.ensureTopics([spec('cache', 2, true)])).rejects.toThrow(
        /exists with 4 partitions/,
      );
    });

    it('resumes a consumer group from its committed offsets', async () => {
      const topology = conformanceTopology(prefix, (t) => [doubler(t)]);
      const p = topology.processors[0]!;
      await runtime.ensureTopics(topology.topics);
      await runtime.append(numbers(`${prefix}.in`, 0, 100));
      const first = await task(runtime, topology, p, 10);
      const before = await stepUntil(first, 40);
      await first.close();
      await runtime.append(numbers(`${prefix}.in`, 100, 150));
      const second = await task(runtime, topology, p, 10);
      expect(await stepUntil(second, 150 - before)).toBe(150 - before);
      await second.close();
      const out = await readAll(runtime, `${prefix}.out`);
      const seen = out.map((r) => `${(r.value as { n: number }).n}/${(r.value as { copy: number }).copy}`);
      expect(new Set(seen).size).toBe(300);
      expect(seen).toHaveLength(300);
      const check = await task(runtime, topology, p);
      expect(await check.step(50)).toBe(0);
      await check.close();
    });

    it('reports how far each consumer group is behind', async () => {
      const topology = conformanceTopology(prefix, (t) => [doubler(t)]);
      const p = topology.processors[0]!;
      await runtime.ensureTopics(topology.topics);
      await runtime.append(numbers(`${prefix}.in`, 0, 30));
      const metrics = new EngineMetrics();
      await updateLag(runtime, [p], metrics);
      expect((await metrics.lag.get()).values[0]?.value).toBe(30);
      const t = await task(runtime, topology, p, 10);
      await stepUntil(t, 10);
      await t.close();
      // A poll returns what has arrived, so the steps may have taken a few more than 10.
      const behind = 30 - t.committedInputs;
      expect(behind).toBeLessThanOrEqual(20);
      // Kafka makes transactional offset commits visible to the admin API a moment after the commit.
      const deadline = Date.now() + 15_000;
      let lag = 30;
      while (lag !== behind && Date.now() < deadline) {
        await updateLag(runtime, [p], metrics);
        lag = (await metrics.lag.get()).values[0]?.value ?? -1;
        if (lag !== behind) await new Promise((r) => setTimeout(r, 100));
      }
      expect(lag).toBe(behind);
    });

    it('makes a step atomic: a failed step leaves no output, no state and no offset behind', async () => {
      let failures = 2;
      const base = (t: { input: string; output: string }) => doubler(t);
      const topology = conformanceTopology(prefix, (t) => {
        const inner = base(t);
        return [
          {
            ...inner,
            async process(batch, ctx) {
              await inner.process(batch, ctx);
              if (failures-- > 0) throw new Error('crash after emitting');
            },
          },
        ];
      });
      const p = topology.processors[0]!;
      await runtime.ensureTopics(topology.topics);
      await runtime.append(numbers(`${prefix}.in`, 0, 30));
      const t = await task(runtime, topology, p, 100);
      await stepUntil(t, 30);
      await t.close();
      const out = await readAll(runtime, `${prefix}.out`);
      expect(out).toHaveLength(60);
      const again = await task(runtime, topology, p);
      expect(await again.step(50)).toBe(0);
      await again.close();
      expect(await countTotal(runtime, p)).toBe(30);
    });

    it('sends invalid and poison records to the dead-letter topic with a reason, and goes on', async () => {
      const input = `${prefix}.in`;
      const topology = conformanceTopology(prefix, (t) => {
        const inner = doubler(t);
        return [
          {
            ...inner,
            async process(batch, ctx) {
              for (const r of batch) {
                const n = (r.value as { n: number }).n;
                if (n === 13) throw new Error('thirteen is poison');
                if (n === 7) ctx.deadLetter(r, 'invalid-input', 'seven is refused');
              }
              await inner.process(
                batch.filter((r) => (r.value as { n: number }).n !== 7),
                ctx,
              );
            },
          },
        ];
      });
      const p = topology.processors[0]!;
      await runtime.ensureTopics(topology.topics);
      await runtime.append(numbers(input, 0, 20));
      const t = await task(runtime, topology, p, 20);
      await stepUntil(t, 20);
      await t.close();
      const dlq = await readAll(runtime, `${prefix}.dlq`);
      const reasons = dlq.map((r) => (r.value as { reason: string }).reason).sort();
      expect(reasons).toEqual(['processor failed 3 times: thirteen is poison', 'seven is refused']);
      const origin = dlq.find((r) => (r.value as { reason: string }).reason.startsWith('processor'))!
        .value as {
        origin: { topic: string; offset: string };
        payload: string;
      };
      expect(origin.origin.topic).toBe(input);
      expect(JSON.parse(origin.payload)).toEqual({ n: 13 });
      const outs = (await readAll(runtime, `${prefix}.out`)).map((r) => (r.value as { n: number }).n);
      expect(new Set(outs)).toEqual(new Set([...Array(20).keys()].filter((n) => n !== 7 && n !== 13)));
      expect(outs).toHaveLength(36);
    });

    it('restores state stores after a restart', async () => {
      const topology = conformanceTopology(prefix, (t) => [doubler(t)]);
      const p = topology.processors[0]!;
      await runtime.ensureTopics(topology.topics);
      await runtime.append(numbers(`${prefix}.in`, 0, 25));
      const first = await task(runtime, topology, p, 10);
      await stepUntil(first, 25);
      await first.close();
      await runtime.close();
      runtime = await harness.open();
      await runtime.append(numbers(`${prefix}.in`, 25, 40));
      const second = await task(runtime, topology, p, 10);
      await stepUntil(second, 15);
      await second.close();
      expect(await countTotal(runtime, p)).toBe(40);
    });

    it('a task reading nothing (a source, as ingest) sees its store across steps and after a restart', async () => {
      // A source keeps state (ingest's index of works) in steps of its own, with no input partition
      // a rebalance would restore it for: each step must read what the steps before it committed.
      const source: Processor = {
        name: `${prefix}-source`,
        reads: [],
        writes: [`${prefix}.out`],
        stores: ['seen'],
        async process() {},
      };
      // Driven by its own steps, as ingest is: not a processor of the topology, which reads topics.
      const topology = conformanceTopology(prefix, (t) => [doubler(t)]);
      await runtime.ensureTopics(topology.topics);
      const emitOnce = (t: ProcessorTask, key: string) =>
        t.stepWith(async (ctx) => {
          const seen = ctx.store('seen');
          if (seen.get(key) !== undefined) return;
          seen.put(key, true);
          ctx.emit(`${prefix}.out`, key, { key });
        });
      const first = await task(runtime, topology, source);
      await emitOnce(first, 'a');
      await emitOnce(first, 'a');
      await emitOnce(first, 'b');
      await first.close();
      await runtime.close();
      runtime = await harness.open();
      const second = await task(runtime, topology, source);
      await emitOnce(second, 'a');
      await emitOnce(second, 'c');
      await second.close();
      const keys = (await readAll(runtime, `${prefix}.out`)).map((r) => r.key).sort();
      expect(keys).toEqual(['a', 'b', 'c']);
    });

    it('in run(), commits the steps of one interval together: a failure loses them all, then all come back', async () => {
      let sinkCalls = 0;
      const topology = conformanceTopology(prefix, (t) => {
        const inner = doubler(t);
        return [
          {
            ...inner,
            async process(batch, ctx) {
              await inner.process(batch, ctx);
              // The third step's sink fails: an outage around the processor, not its fault.
              ctx.sink(async () => {
                if (++sinkCalls === 3) throw new Error('sink outage');
              });
            },
          },
        ];
      });
      const p = topology.processors[0]!;
      await runtime.ensureTopics(topology.topics);
      await runtime.append(numbers(`${prefix}.in`, 0, 100));
      const t = await new ProcessorTask(runtime, topology, p, {
        log: silent,
        metrics: new EngineMetrics(),
        batchSize: 10,
        // Longer than the test: the transaction commits only when the input runs dry.
        commitIntervalMs: 600_000,
        sleep: async () => {},
      }).open();
      await runUntilCommitted(t, 100);
      expect(t.committedInputs).toBe(100);
      // Steps 1 and 2 ran twice: once in the transaction the outage aborted, once after the rewind.
      expect(sinkCalls).toBeGreaterThanOrEqual(12);
      const out = await readAll(runtime, `${prefix}.out`);
      const ids = out.map((r) => `${(r.value as { n: number }).n}/${(r.value as { copy: number }).copy}`);
      expect(new Set(ids).size).toBe(200);
      expect(ids).toHaveLength(200);
      // The counter read the aborted steps' writes while they were open; none of that survives.
      expect(await countTotal(runtime, p)).toBe(100);
    });

    it('in run(), commits on the interval even while a slow step is still processing', async () => {
      const sizes: number[] = [];
      const committedAtEnd: number[] = [];
      let t: ProcessorTask | undefined;
      const topology = conformanceTopology(prefix, (io) => {
        const inner = doubler(io);
        return [
          {
            ...inner,
            // One call of process() a step (a partitioned processor gets one a partition).
            scope: 'global',
            async process(batch, ctx) {
              await inner.process(batch, ctx);
              // A slow step, as a batch of LLM calls is: four commit intervals long.
              await new Promise((r) => setTimeout(r, 400));
              sizes.push(batch.length);
              committedAtEnd.push(t!.committedInputs);
            },
          },
        ];
      });
      const p = topology.processors[0]!;
      await runtime.ensureTopics(topology.topics);
      await runtime.append(numbers(`${prefix}.in`, 0, 30));
      t = await new ProcessorTask(runtime, topology, p, {
        log: silent,
        metrics: new EngineMetrics(),
        batchSize: 10,
        commitIntervalMs: 100,
      }).open();
      await runUntilCommitted(t, 30);
      expect(t.committedInputs).toBe(30);
      // As each slow step ends, every step before it is committed: no transaction stayed open
      // for the length of a step (on Kafka, that could run past the transaction timeout).
      expect(committedAtEnd).toEqual(sizes.map((_, i) => sizes.slice(0, i).reduce((a, b) => a + b, 0)));
    });

    it('in run(), keeps work in flight across steps and commits, and commits outputs in offset order per partition', async () => {
      const seen = { now: 0, max: 0 };
      const total = 90;
      const topology = conformanceTopology(prefix, (io) => [
        // One slow input in every ten; batches of 4 against a window of 12: the window, not the
        // batch, bounds the work in flight.
        windowedDoubler({
          ...io,
          inFlight: 12,
          batchSize: 4,
          seen,
          latencyMs: (n) => (n % 10 === 3 ? 150 : 5),
        }),
      ]);
      const p = topology.processors[0]!;
      await runtime.ensureTopics(topology.topics);
      await runtime.append(numbers(`${prefix}.in`, 0, total));
      const t = await new ProcessorTask(runtime, topology, p, {
        log: silent,
        metrics: new EngineMetrics(),
        commitIntervalMs: 20,
      }).open();
      await runUntilCommitted(t, total);
      expect(seen.max).toBe(12);
      const out = await readAll(runtime, `${prefix}.out`);
      expect(out).toHaveLength(2 * total);
      expect(new Set(out.map((r) => JSON.stringify(r.value))).size).toBe(2 * total);
      // Within a partition the outputs follow the inputs' order, whatever order the work ended in.
      const inputs = await readAll(runtime, `${prefix}.in`);
      for (let partition = 0; partition < 3; partition++) {
        const order = inputs
          .filter((r) => r.partition === partition)
          .map((r) => (r.value as { n: number }).n);
        const emitted = out
          .filter((r) => r.partition === partition && (r.value as { copy: number }).copy === 0)
          .map((r) => (r.value as { n: number }).n);
        expect(emitted).toEqual(order);
      }
      expect(await countTotal(runtime, p)).toBe(total);
    });

    it('trusts the stamp of values the engine validated, validates the rest, and forwards bytes as they are', async () => {
      const articles = `${prefix}.articles`;
      const copies = `${prefix}.copies`;
      const loose = `${prefix}.loose`;
      const topology = defineTopology({
        topics: [
          { name: articles, partitions: 1, schema: 'article' },
          { name: copies, partitions: 1, schema: 'article' },
          { name: loose, partitions: 1, schema: null },
          { name: `${prefix}.dlq`, partitions: 1, schema: 'dead-letter' },
        ],
        processors: [
          {
            name: `forward-${prefix}`,
            reads: [articles],
            writes: [copies, loose],
            stores: [],
            async process(batch, ctx) {
              for (const r of batch) {
                ctx.forward(r, copies);
                ctx.forward(r, loose);
              }
            },
          },
        ],
        deadLetterTopic: `${prefix}.dlq`,
      });
      const codecs = new TopicCodecs(topology);
      const stamp = codecs.stampOf(articles);
      // Spaced out, unlike anything JSON.stringify writes: shows whether bytes were reused.
      const spaced = JSON.stringify({ ...sampleArticle, id: 'doi:10.1/spaced' }, null, 1);
      await runtime.ensureTopics(topology.topics);
      await runtime.append([
        { topic: articles, key: 'valid', value: spaced, validatedAs: stamp },
        { topic: articles, key: 'outsider', value: '{"id":"no"}' },
        { topic: articles, key: 'old-schema', value: '{"id":"no"}', validatedAs: '0'.repeat(32) },
        // The writer's word is taken: a stamped value is not checked again (as a Confluent schema id is).
        { topic: articles, key: 'trusted', value: '{"id":"taken on trust"}', validatedAs: stamp },
      ]);
      const t = await task(runtime, topology, topology.processors[0]!, 10);
      await stepUntil(t, 4);
      await t.close();
      const read = async (topic: string) => {
        const rows = await runtime.read(topic, 0, 0, 100);
        return Object.fromEntries(rows.map((r) => [r.key, r]));
      };
      const copied = await read(copies);
      expect(Object.keys(copied).sort()).toEqual(['trusted', 'valid']);
      expect(copied.valid!.value).toBe(spaced);
      expect(copied.valid!.validatedAs).toBe(stamp);
      expect(copied.trusted!.value).toBe('{"id":"taken on trust"}');
      // Another schema: the value is checked and written anew.
      const loosened = await read(loose);
      expect(loosened.valid!.value).toBe(JSON.stringify(JSON.parse(spaced)));
      expect(loosened.valid!.validatedAs).toBe(codecs.stampOf(loose));
      const dlq = await readAll(runtime, `${prefix}.dlq`);
      expect(dlq.map((r) => (r.value as { reason: string }).reason.split(':')[0]).sort()).toEqual([
        'invalid input',
        'invalid input',
      ]);
    });

    it.each([
      ['the doubler', 'batch', 30_000, harness.kills],
      ['work in flight across steps (a window)', 'window', 3_000, Math.min(harness.kills, 5)],
    ] as const)(
      'writes every output exactly once across repeated kill -9 of the processing process: %s',
      async (_label, mode, total, defaultKills) => {
        const kills = Number(process.env.BIOALCHEMY_KILLS ?? defaultKills);
        const topology = conformanceTopology(prefix, (t) =>
          mode === 'batch' ? [doubler(t)] : [windowedDoubler({ ...t, inFlight: 1, latencyMs: () => 0 })],
        );
        await runtime.ensureTopics(topology.topics);
        await runtime.append(numbers(`${prefix}.in`, 0, total));
        let killed = 0;
        for (; killed < kills; killed++) {
          const finished = await runChild(harness.url(), prefix, mode, {
            killAfterMs: 150 + Math.random() * 450,
          });
          if (finished) break;
        }
        expect(killed).toBe(kills);
        expect(await runChild(harness.url(), prefix, mode, {})).toBe(true);
        const out = await readAll(runtime, `${prefix}.out`);
        const ids = out.map((r) => `${(r.value as { n: number }).n}/${(r.value as { copy: number }).copy}`);
        expect(new Set(ids).size).toBe(2 * total);
        expect(ids).toHaveLength(2 * total);
        const p = topology.processors[0]!;
        expect(await countTotal(runtime, p)).toBe(total);
      },
      600_000,
    );
  });
}

const CHILD = fileURLToPath(new URL('./child.ts', import.meta.url));

/**
 * Runs the doubler in a child process. With killAfterMs, SIGKILLs it that long after it reports its
 * first commit and resolves false; otherwise waits for it to finish all input and resolves true.
 */
function runChild(
  url: string,
  prefix: string,
  mode: 'batch' | 'window',
  opts: { killAfterMs?: number },
): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', CHILD, url, prefix, mode, opts.killAfterMs ? 'slow' : 'fast'],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (opts.killAfterMs && out.includes('committing')) {
        out = '';
        setTimeout(() => child.kill('SIGKILL'), opts.killAfterMs).unref();
        opts.killAfterMs = undefined;
      }
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve(false);
      else if (code === 0) resolve(true);
      else reject(new Error(`child exited with ${code ?? signal}`));
    });
  });
}
