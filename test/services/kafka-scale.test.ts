import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { partitionKey } from '../../topology/records.js';
import { KafkaRuntime } from '../../topology/runtime/kafka/index.js';
import type { StoredValue } from '../../topology/runtime/types.js';
import { scaleTopology } from '../conformance/processors.js';
import { startRunning } from '../conformance/running.js';
import { readAll } from '../conformance/suite.js';
import { KAFKA } from './env.js';

const WORKER = fileURLToPath(new URL('../conformance/worker.ts', import.meta.url));

/** A worker process (test/conformance/worker.ts) and the JSON lines it has logged. */
class Worker {
  readonly lines: Record<string, unknown>[] = [];
  private readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private listeners: (() => void)[] = [];

  constructor(
    url: string,
    prefix: string,
    readonly id: string,
    pace: 'fast' | 'slow' = 'fast',
  ) {
    this.child = spawn(process.execPath, ['--import', 'tsx', WORKER, url, prefix, id, pace], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let rest = '';
    this.child.stdout!.on('data', (chunk: Buffer) => {
      const text = rest + chunk.toString();
      const lines = text.split('\n');
      rest = lines.pop()!;
      for (const line of lines) if (line.trim()) this.lines.push(JSON.parse(line));
      if (process.env.SCALE_DEBUG) appendFileSync(`/tmp/scale-${id}.log`, `${lines.join('\n')}\n`);
      for (const l of this.listeners) l();
    });
    this.exited = new Promise((resolve) =>
      this.child.on('exit', (code, signal) => resolve({ code, signal })),
    );
  }

  /** Resolves once a logged line passes the check; fails past the deadline or if the worker exits. */
  waitFor(what: string, check: (line: Record<string, unknown>) => boolean, ms = 90_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const done = () => {
        if (!this.lines.some(check)) return;
        clearTimeout(timer);
        this.listeners = this.listeners.filter((l) => l !== done);
        resolve();
      };
      const timer = setTimeout(() => reject(new Error(`worker ${this.id}: ${what} not within ${ms} ms`)), ms);
      this.listeners.push(done);
      done();
    });
  }

  signal(sig: NodeJS.Signals): void {
    this.child.kill(sig);
  }

  /** Asks it to stop (it commits what it has) and waits. */
  async stop(): Promise<void> {
    this.child.kill('SIGTERM');
    const { code } = await this.exited;
    expect(code).toBe(0);
  }

  kill(): void {
    this.child.kill('SIGKILL');
  }
}

const workers: Worker[] = [];
afterEach(() => {
  for (const w of workers.splice(0)) w.kill();
});

const numbers = (topic: string, from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => ({
    topic,
    key: String(from + i),
    value: JSON.stringify({ n: from + i }),
  }));

/**
 * Every output, once read_committed readers can see them all: a worker killed with a transaction
 * open and never restarted holds back its partitions' stable offset until the broker aborts it
 * (transaction.timeout.ms, 10 s) on rdkafka, where each worker has a transactional id of its own.
 */
async function outputs(runtime: KafkaRuntime, topic: string, expected: number): Promise<string[]> {
  let ids: string[] = [];
  await until(
    `${expected} outputs visible`,
    async () => {
      const out = await readAll(runtime, topic);
      ids = out.map((r) => `${(r.value as { n: number }).n}/${(r.value as { copy: number }).copy}`);
      return ids.length >= expected;
    },
    30_000,
  ).catch(() => {});
  return ids;
}

/** Polls until check passes, or fails past the deadline. */
async function until(what: string, check: () => Promise<boolean>, ms = 120_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Input records the group has committed, and whether it has committed every partition to its end. */
async function progress(runtime: KafkaRuntime, group: string, topic: string) {
  const committed = await runtime.committedOffsets(group, [topic]).catch(() => new Map<string, number>());
  const ends = await runtime.endOffsets(topic);
  let total = 0;
  let done = true;
  for (const [p, end] of ends.entries()) {
    const c = committed.get(partitionKey(topic, p)) ?? 0;
    total += c;
    if (c < end) done = false;
  }
  return { total, done };
}

const sorted = (rows: readonly StoredValue[]) => rows.map((r) => `${r.partition}/${r.key}=${r.value}`).sort();

/** A worker's partitions as its last assignment gave them. */
const assignment = (w: Worker) =>
  w.lines.filter((l) => l.msg === 'assignment').at(-1)?.partitions as number[] | undefined;

const restores = (w: Worker) =>
  w.lines.filter((l) => l.msg === 'partitions assigned, state restored' || l.msg === 'state restored');

for (const client of ['kafkajs', 'rdkafka'] as const) {
  const url = `kafka://${KAFKA}?client=${client}`;

  describe(`kafka scale-out (${client})`, () => {
    it('three workers over 6 partitions, one killed and one added: every input once, state restored', async () => {
      const prefix = `scale-${client}-${randomUUID().slice(0, 8)}`;
      const topology = scaleTopology(prefix);
      const p = topology.processors[0]!;
      const input = `${prefix}.in`;
      const runtime = await KafkaRuntime.open(url);
      try {
        await runtime.ensureTopics(topology.topics);
        const [w1, w2, w3] = ['w1', 'w2', 'w3'].map((id) => new Worker(url, prefix, id)) as [
          Worker,
          Worker,
          Worker,
        ];
        workers.push(w1, w2, w3);
        // The group settles on two partitions each; then the input comes, and mid-run one dies.
        for (const w of [w1, w2, w3])
          await w.waitFor('two partitions', () => (assignment(w)?.length ?? 0) === 2);
        await runtime.append(numbers(input, 0, 3000));
        await until(
          'a third of the input',
          async () => (await progress(runtime, p.name, input)).total >= 1000,
        );
        w2.kill();
        await runtime.append(numbers(input, 3000, 6000));
        await until(
          'progress after the kill',
          async () => (await progress(runtime, p.name, input)).total >= 4000,
        );
        const w4 = new Worker(url, prefix, 'w4');
        workers.push(w4);
        // The late worker takes partitions that others held: it restores their state, not zero.
        await w4.waitFor(
          'restoring moved partitions',
          (l) => restores(w4).includes(l) && Number(l.records) > 0,
        );
        await until('every input committed', async () => (await progress(runtime, p.name, input)).done);
        for (const w of [w1, w3, w4]) await w.stop();

        const ids = await outputs(runtime, `${prefix}.out`, 12_000);
        if (process.env.SCALE_DEBUG) {
          const out = await readAll(runtime, `${prefix}.out`);
          const seen = new Set(out.map((r) => (r.value as { n: number }).n));
          const ins = await readAll(runtime, input);
          const missing = ins
            .filter((r) => !seen.has((r.value as { n: number }).n))
            .map((r) => `${r.partition}@${r.offset}`);
          appendFileSync('/tmp/scale-missing.log', `${missing.length} ${missing.join(' ')}\n`);
        }
        expect(ids).toHaveLength(12_000);
        expect(new Set(ids).size).toBe(12_000);
        // Partitions moved when w2 died: its survivors restored them from the changelog.
        expect([w1, w3].some((w) => restores(w).length > 1)).toBe(true);
        const scaled = await runtime.readStore(p.name, 'count');

        // The same input through one worker: the store must come out the same, key by key.
        const single = `single-${client}-${randomUUID().slice(0, 8)}`;
        const alone = scaleTopology(single);
        await runtime.ensureTopics(alone.topics);
        await runtime.append(numbers(`${single}.in`, 0, 6000));
        const one = await startRunning(runtime, alone, alone.processors[0]!);
        await until('the single worker done', async () => one.task.committedInputs >= 6000);
        await one.stop();
        const reference = await runtime.readStore(alone.processors[0]!.name, 'count');
        expect(sorted(scaled)).toEqual(sorted(reference));
        const totals = scaled.filter((r) => r.key === 'total').reduce((n, r) => n + Number(r.value), 0);
        expect(totals).toBe(6000);
      } finally {
        await runtime.close();
      }
    }, 300_000);

    it('a zombie, paused past its session timeout and resumed, cannot commit', async () => {
      const prefix = `zombie-${client}-${randomUUID().slice(0, 8)}`;
      const topology = scaleTopology(prefix);
      const p = topology.processors[0]!;
      const input = `${prefix}.in`;
      const runtime = await KafkaRuntime.open(url);
      try {
        await runtime.ensureTopics(topology.topics);
        await runtime.append(numbers(input, 0, 3000));
        // Slow steps: it is mid-transaction, with input left, when it is paused.
        const zombie = new Worker(url, prefix, 'zombie', 'slow');
        workers.push(zombie);
        await zombie.waitFor('a commit', (l) => l.msg === 'committing');
        // Mid-run: it has a transaction open most of the time, and input left.
        zombie.signal('SIGSTOP');
        const successor = new Worker(url, prefix, 'successor');
        workers.push(successor);
        // The successor gets every partition once the zombie's session has expired, and goes on.
        await successor.waitFor(
          'all six partitions',
          () => new Set(restores(successor).flatMap((l) => l.partitions as number[])).size === 6,
        );
        await successor.waitFor('a commit', (l) => l.msg === 'committing');
        await runtime.append(numbers(input, 3000, 4000));
        const before = zombie.lines.length;
        zombie.signal('SIGCONT');
        // Resumed, the zombie tries to commit what it had open, and is refused: fenced, an old
        // generation, an unknown member or its transaction timed out, as the broker saw it first.
        // Or the client learns first that its partitions are gone and gives the transaction up.
        // Either way what it had open never commits: the exactly-once checks below prove that.
        await zombie.waitFor(
          'a refused commit or a lost assignment',
          (l) =>
            zombie.lines.indexOf(l) >= before &&
            (l.msg === 'step failed' ||
              l.msg === 'step failed outside the processor; retrying' ||
              l.msg === 'partitions reassigned' ||
              l.msg === 'partitions revoked'),
        );
        await until('every input committed', async () => (await progress(runtime, p.name, input)).done);
        for (const w of [zombie, successor]) await w.stop();
        const ids = await outputs(runtime, `${prefix}.out`, 8000);
        if (process.env.SCALE_DEBUG) {
          const out = await readAll(runtime, `${prefix}.out`);
          const ins = new Map(
            (await readAll(runtime, input)).map((r) => [
              (r.value as { n: number }).n,
              `${r.partition}@${r.offset}`,
            ]),
          );
          const count = new Map<number, number>();
          for (const r of out)
            count.set((r.value as { n: number }).n, (count.get((r.value as { n: number }).n) ?? 0) + 1);
          const dups = [...count].filter(([, c]) => c > 2).map(([n]) => ins.get(n));
          appendFileSync('/tmp/scale-dups.log', `${dups.length} ${dups.join(' ')}\n`);
        }
        expect(ids).toHaveLength(8000);
        expect(new Set(ids).size).toBe(8000);
        const totals = (await runtime.readStore(p.name, 'count'))
          .filter((r) => r.key === 'total')
          .reduce((n, r) => n + Number(r.value), 0);
        expect(totals).toBe(4000);
      } finally {
        await runtime.close();
      }
    }, 300_000);
  });
}
