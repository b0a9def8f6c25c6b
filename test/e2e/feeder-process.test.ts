import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, start } from '../llm-server/server.js';
import { until } from '../until.js';
import { BIN, ingestAndRun, workspace } from './helpers.js';

// `bioalchemy run` serving the feeder leaves the LLM stages to a process of its own (issue 31):
// the feeder answers while that process cannot run at all (SIGSTOP), the process reports its
// metrics to the run's /metrics, and it never outlives the run, stopped or killed.
describe('run: the LLM stages in a process of their own', () => {
  let server: LlmServer;
  let config: string;
  let serving: ChildProcess | null = null;
  beforeAll(async () => {
    server = await start({ responder: pipelineResponder });
    config = workspace(server.url).config;
    // A pool to lease from.
    await ingestAndRun(config);
  });
  afterEach(() => {
    serving?.kill('SIGKILL');
    serving = null;
  });
  afterAll(async () => {
    await server.stop();
  });

  it('answers leases and acks while the pipeline process is stopped, and reports its metrics', async () => {
    const run = await startRun(config);
    serving = run.child;
    expect(run.pipelinePid).not.toBe(run.child.pid);
    expect(parentOf(run.pipelinePid)).toBe(run.child.pid);
    await run.pipelineRunning;

    process.kill(run.pipelinePid, 'SIGSTOP');
    try {
      const lease = await leaseBatch(run.feeder);
      const batch = lease.batch as { id: string; items: unknown[] };
      const ack = await post(`${run.feeder}/v1/ack`, {
        run: 'own-process',
        batchId: batch.id,
        leaseId: lease.leaseId,
        rewards: batch.items.map(() => 1),
      });
      expect(ack.status).toBe(200);
    } finally {
      process.kill(run.pipelinePid, 'SIGCONT');
    }

    // The pipeline process's metrics reach the run's /metrics beside the feeder's own.
    await until(
      "the feeder's histograms and the pipeline process's metrics on /metrics",
      async () => {
        const text = await (await fetch(`${run.dashboard}/metrics`)).text();
        const found =
          /bioalchemy_feeder_request_seconds_bucket\{[^}]*route="lease"/.test(text) &&
          text.includes('bioalchemy_feeder_event_loop_delay_seconds_count') &&
          /process_cpu_user_seconds_total\{[^}]*worker="[^"]*-pipeline"/.test(text);
        return found || undefined;
      },
      15_000,
    );

    const exited = new Promise((resolve) => run.child.once('exit', resolve));
    run.child.kill('SIGTERM');
    await exited;
    serving = null;
    expect(alive(run.pipelinePid)).toBe(false);
  });

  it('takes the pipeline process with it when killed, while it starts or once it runs', async () => {
    for (const when of ['starting', 'running'] as const) {
      const run = await startRun(config);
      serving = run.child;
      if (when === 'running') await run.pipelineRunning;
      run.child.kill('SIGKILL');
      await until(
        `the pipeline process gone (run killed while it was ${when})`,
        async () => (alive(run.pipelinePid) ? undefined : true),
        15_000,
      );
    }
  });
});

interface StartedRun {
  child: ChildProcess;
  feeder: string;
  dashboard: string;
  pipelinePid: number;
  /** Resolves when the pipeline process logs that its processors run. */
  pipelineRunning: Promise<void>;
}

/** `run --port 0 --dashboard-port 0`, its addresses and the pipeline process's pid from its JSON log lines. */
function startRun(config: string): Promise<StartedRun> {
  const child = spawn(
    process.execPath,
    [BIN, 'run', '--port', '0', '--dashboard-port', '0', '--config', config],
    {
      env: { ...process.env, E2E_LLM_KEY: 'test-key', BIOALCHEMY_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let markRunning: () => void = () => {};
  const pipelineRunning = new Promise<void>((resolve) => {
    markRunning = resolve;
  });
  return new Promise((resolve, reject) => {
    const seen: Partial<StartedRun> = { child, pipelineRunning };
    let tail = '';
    child.once('exit', (code, signal) => reject(new Error(`run exited (${signal ?? code}): ${tail}`)));
    createInterface({ input: child.stderr! }).on('line', (line) => {
      tail = `${tail}\n${line}`.slice(-3000);
      let entry: { msg?: string; url?: string; pid?: number; worker?: string };
      try {
        entry = JSON.parse(line);
      } catch {
        return;
      }
      if (entry.msg === 'feeder API') seen.feeder = entry.url!;
      if (entry.msg === 'dashboard') seen.dashboard = entry.url!;
      if (entry.msg?.startsWith('pipeline process started')) seen.pipelinePid = entry.pid!;
      if (entry.msg === 'running' && entry.worker?.endsWith('-pipeline')) markRunning();
      if (seen.feeder && seen.dashboard && seen.pipelinePid) resolve(seen as StartedRun);
    });
  });
}

async function post(url: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(5000),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

/** The first batch of a run: the feeder may first wait for its pool and mix from the log. */
async function leaseBatch(feeder: string): Promise<Record<string, unknown>> {
  let lease: Record<string, unknown> = {};
  await until(
    'a batch leased',
    async () => {
      lease = (await post(`${feeder}/v1/lease`, { run: 'own-process', rank: 0, worldSize: 1, batchSize: 2 }))
        .json;
      return lease.status === 'leased' || undefined;
    },
    30_000,
  );
  return lease;
}

function parentOf(pid: number): number {
  return Number(/^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
