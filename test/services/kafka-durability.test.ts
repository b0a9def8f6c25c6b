import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { EngineMetrics } from '../../topology/metrics.js';
import { KafkaRuntime } from '../../topology/runtime/kafka/index.js';
import { ProcessorTask } from '../../topology/task.js';
import { conformanceTopology, doubler } from '../conformance/processors.js';
import { readAll } from '../conformance/suite.js';
import { KAFKA } from './env.js';

const script = (name: string) => fileURLToPath(new URL(`../../deploy/kafka/${name}`, import.meta.url));

async function until(what: string, check: () => Promise<boolean>, deadlineMs = 120_000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${deadlineMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('kafka runtime across a broker restart', () => {
  it('loses nothing and duplicates nothing when the broker restarts mid-run', async () => {
    const prefix = `restart-${randomUUID().slice(0, 8)}`;
    const url = `kafka://${KAFKA}?client=kafkajs`;
    const topology = conformanceTopology(prefix, (t) => [doubler({ ...t, batchSize: 50, delayMs: 1 })]);
    const total = 3_000;
    let runtime = await KafkaRuntime.open(url);
    await runtime.ensureTopics(topology.topics);
    await runtime.append(
      Array.from({ length: total }, (_, n) => ({
        topic: `${prefix}.in`,
        key: String(n),
        value: JSON.stringify({ n }),
      })),
    );
    await runtime.close();

    runtime = await KafkaRuntime.open(url);
    const task = await new ProcessorTask(runtime, topology, topology.processors[0]!, {
      log: pino({ level: process.env.TEST_LOG ?? 'silent' }, pino.destination(2)),
      metrics: new EngineMetrics(),
    }).open();
    const stop = new AbortController();
    const running = task.run(stop.signal);
    // The counter is per input partition (3 of them).
    const processed = async () =>
      [0, 1, 2].reduce((n, p) => n + Number(task.readState('count', 'total', p) ?? 0), 0);
    await until('first records processed', async () => (await processed()) >= 300);

    expect(spawnSync('bash', [script('stop.sh')], { stdio: 'inherit' }).status).toBe(0);
    const atStop = await processed();
    expect(atStop).toBeLessThan(total);
    expect(spawnSync('bash', [script('start.sh')], { stdio: 'inherit' }).status).toBe(0);

    await until('all records processed after the restart', async () => (await processed()) >= total, 240_000);
    stop.abort();
    await running;
    await task.close();
    const out = await readAll(runtime, `${prefix}.out`);
    const ids = out.map((r) => `${(r.value as { n: number }).n}/${(r.value as { copy: number }).copy}`);
    expect(new Set(ids).size).toBe(2 * total);
    expect(ids).toHaveLength(2 * total);
    await runtime.close();
  }, 400_000);
});
