import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { KafkaRuntime } from '../../topology/runtime/kafka/index.js';
import { scaleTopology } from '../conformance/processors.js';
import { startRunning } from '../conformance/running.js';
import { KAFKA } from './env.js';

const BIN = fileURLToPath(new URL('../../bin/bioalchemy.js', import.meta.url));

function cli(config: string, args: string[], input = '') {
  const r = spawnSync(process.execPath, ['--import', 'tsx', BIN, '--config', config, ...args], {
    input,
    encoding: 'utf8',
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('bioalchemy status and reset on Kafka', () => {
  it("shows a running group's members, partitions and lag; reset deletes one app only after a confirmation", async () => {
    const app = `cli${randomUUID().slice(0, 8)}`;
    const other = `cli${randomUUID().slice(0, 8)}`;
    const url = `kafka://${KAFKA}?client=rdkafka`;
    const config = join(mkdtempSync(join(tmpdir(), 'bioalchemy-cli-')), 'config.json');
    writeFileSync(config, JSON.stringify({ log: url, app }));
    const topology = scaleTopology('t');
    const runtime = await KafkaRuntime.open(url, { app, worker: 'w7' });
    const bystander = await KafkaRuntime.open(url, { app: other });
    try {
      await bystander.ensureTopics(topology.topics);
      await runtime.ensureTopics(topology.topics);
      await runtime.append(
        Array.from({ length: 60 }, (_, n) => ({
          topic: 't.in',
          key: String(n),
          value: JSON.stringify({ n }),
        })),
      );
      const { task, stop } = await startRunning(runtime, topology, topology.processors[0]!);
      const deadline = Date.now() + 60_000;
      while (task.committedInputs < 60 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(task.committedInputs).toBe(60);

      const status = cli(config, ['status', '--json']);
      expect(status.status).toBe(0);
      const groups = status.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(groups.map((g) => g.group)).toEqual(['counter-t.in']);
      expect(groups[0].members).toHaveLength(1);
      expect(groups[0].members[0].client).toContain('w7');
      expect(groups[0].members[0].partitions['t.in']).toEqual([0, 1, 2, 3, 4, 5]);
      expect(groups[0].lag['t.in']).toHaveLength(6);
      await stop();

      // Not confirmed: nothing goes.
      const refused = cli(config, ['reset', '--app', app], 'no\n');
      expect(refused.status).toBe(0);
      expect(refused.stdout).toContain('nothing deleted');
      expect((await runtime.appResources()).topics).toHaveLength(4);
      const done = cli(config, ['reset', '--app', app], `${app}\n`);
      expect(done.stdout, done.stderr).toContain('deleted 4 topics and 1 groups');
      expect(await runtime.appResources()).toEqual({ topics: [], groups: [] });
      // Another app on the same cluster keeps its topics.
      expect((await bystander.appResources()).topics).toHaveLength(3);
    } finally {
      await bystander.deleteApp();
      await runtime.close();
      await bystander.close();
    }
  }, 120_000);
});
