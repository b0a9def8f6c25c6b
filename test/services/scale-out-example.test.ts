import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openRuntime } from '../../topology/runtime/open.js';
import { readAll } from '../conformance/suite.js';
import { BIN, syntheticArticles } from '../e2e/helpers.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { start } from '../llm-server/server.js';
import { KAFKA } from './env.js';

interface Child {
  readonly process: ChildProcess;
  stderr: string;
  stdout: string;
}

/** The CLI in a child whose working folder is `cwd`, as a user starts it from there. */
function bioalchemy(cwd: string, args: string[], input?: string): Child {
  const child: Child = {
    process: spawn(process.execPath, [BIN, ...args], {
      cwd,
      env: { ...process.env, E2E_LLM_KEY: 'test-key', BIOALCHEMY_LOG_LEVEL: 'info' },
      stdio: ['pipe', 'pipe', 'pipe'],
    }),
    stderr: '',
    stdout: '',
  };
  child.process.stdout!.on('data', (c: Buffer) => {
    child.stdout += c;
  });
  child.process.stderr!.on('data', (c: Buffer) => {
    child.stderr += c;
  });
  child.process.stdin!.end(input ?? '');
  return child;
}

async function finished(child: Child): Promise<number | null> {
  if (child.process.exitCode === null && child.process.signalCode === null) await once(child.process, 'exit');
  return child.process.exitCode;
}

interface GroupStatus {
  group: string;
  members: { client: string; partitions: Record<string, number[]> }[];
  lag: Record<string, (number | null)[]>;
}

/** The last progress line's committed inputs of a processor, as the worker logged it. */
function committedBy(child: Child, processor: string): number {
  const progress = child.stderr
    .split('\n')
    .filter((l) => l.includes('"msg":"progress"'))
    .map((l) => JSON.parse(l) as { committed: Record<string, number> });
  return progress.at(-1)?.committed[processor] ?? 0;
}

// The README's worked example ("Deploying on several processes or machines"), as written: three
// workers of the LLM stages and one process for the sinks, started from one folder with a config
// that names the log and the LLM (and free ports for the feeder API and dashboard).
describe('the scale-out example of the README on Kafka', () => {
  it('three workers and the sinks stay up, the workers share the partitions, and every article is worked', async () => {
    const server = await start({ responder: pipelineResponder });
    const dir = mkdtempSync(join(tmpdir(), 'bioalchemy-scale-out-'));
    const app = `so${randomUUID().slice(0, 8)}`;
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        log: `kafka://${KAFKA}?client=kafkajs`,
        app,
        llm: { baseUrl: server.url, apiKeyEnv: 'E2E_LLM_KEY', model: 'test-model' },
        server: { port: 0 },
        dashboard: { port: 0 },
      }),
    );
    const workers = [1, 2, 3].map((w) =>
      bioalchemy(dir, [
        'run',
        '--config',
        config,
        '--processors',
        'extract,grade,dedup-bands,dedup,classify',
        '--worker-id',
        `w${w}`,
      ]),
    );
    const sinks = bioalchemy(dir, [
      'run',
      '--config',
      config,
      '--processors',
      'count-sink,sampler,llm-calls,feeder',
      '--worker-id',
      'sinks',
    ]);
    const all = [...workers, sinks];
    let codes: (number | null)[] = [];
    const status = async (): Promise<GroupStatus[]> => {
      const s = bioalchemy(dir, ['status', '--json', '--config', config]);
      if ((await finished(s)) !== 0) return [];
      return s.stdout
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as GroupStatus);
    };
    const groupOf = (groups: GroupStatus[], processor: string) =>
      groups.find((g) => g.group === processor || g.group.endsWith(`.${processor}`));
    const until = async (what: string, done: () => Promise<boolean>) => {
      const deadline = Date.now() + 180_000;
      while (!(await done())) {
        const exited = all.find((c) => c.process.exitCode !== null);
        if (exited)
          throw new Error(`a process exited while waiting for ${what}:\n${exited.stderr.slice(-3000)}`);
        if (Date.now() > deadline)
          throw new Error(
            `no ${what} within 180 s; extract committed by each worker: ${workers.map((w) => committedBy(w, 'extract'))}; ` +
              `groups: ${JSON.stringify(await status())}`,
          );
        await new Promise((r) => setTimeout(r, 500));
      }
    };
    try {
      // All three in extract's group, each with partitions of its input, before any article comes.
      await until('three members of each stage group', async () => {
        const groups = await status();
        return ['extract', 'grade', 'classify'].every((p) => {
          const g = groupOf(groups, p);
          return (
            g?.members.length === 3 && g.members.every((m) => Object.values(m.partitions).flat().length > 0)
          );
        });
      });
      const articles = 24;
      const produced = bioalchemy(
        dir,
        ['produce', 'articles', '--key', 'id', '--config', config],
        syntheticArticles(articles),
      );
      expect(await finished(produced), produced.stderr).toBe(0);

      // Every record of each stage's input committed by one of the workers (consumer lag cannot say
      // it on Kafka: transaction markers, aborted or not, take offsets no record fills).
      const runtime = await openRuntime(`kafka://${KAFKA}?client=kafkajs`, { app });
      const committed = (p: string) => workers.reduce((n, w) => n + committedBy(w, p), 0);
      try {
        await until('every record of the LLM stages committed', async () => {
          const candidates = (await readAll(runtime, 'qa.candidates')).length;
          const graded = (await readAll(runtime, 'qa.graded')).length;
          return (
            committed('extract') >= articles &&
            candidates > 0 &&
            committed('grade') >= candidates &&
            graded > 0 &&
            committed('classify') >= graded
          );
        });
        // Shared: each worker extracted articles of its own partitions, and all stayed up.
        for (const w of workers) expect(committedBy(w, 'extract'), w.stderr.slice(-2000)).toBeGreaterThan(0);
        expect(all.every((c) => c.process.exitCode === null)).toBe(true);

        // Every article has a question or a dead letter about it: none lost between the workers.
        const ids = (await readAll(runtime, 'articles')).map((r) => (r.value as { id: string }).id);
        const answered = new Set(
          (await readAll(runtime, 'qa.candidates')).map((r) => (r.value as { articleId: string }).articleId),
        );
        const dead = (await readAll(runtime, 'dlq')).length;
        expect(ids).toHaveLength(articles);
        expect(ids.filter((id) => !answered.has(id)).length).toBeLessThanOrEqual(dead);
        expect(answered.size).toBeGreaterThan(articles / 2);
      } finally {
        await runtime.close();
      }
    } finally {
      for (const c of all) c.process.kill('SIGTERM');
      codes = await Promise.all(all.map(finished));
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    // Each stops cleanly on SIGTERM, its last transaction committed.
    expect(codes).toEqual([0, 0, 0, 0]);
  }, 300_000);
});
