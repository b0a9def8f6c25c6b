import { type SpawnSyncReturns, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const BIN = new URL('../../bin/bioalchemy.js', import.meta.url).pathname;
export const FIXTURES = new URL('../fixtures/sources/', import.meta.url).pathname;

/** A data folder and a config pointing the pipeline at an OpenAI-compatible endpoint. */
export function workspace(llmUrl: string, extra: Record<string, unknown> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'bioalchemy-e2e-'));
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      log: `file:${join(dir, 'log')}`,
      clickhouse: `chdb:${join(dir, 'chdb')}`,
      llm: {
        baseUrl: llmUrl,
        apiKeyEnv: 'E2E_LLM_KEY',
        model: 'test-model',
        retry: { baseDelayMs: 5, maxDelayMs: 50 },
      },
      ...extra,
    }),
  );
  return { dir, config };
}

const env = { ...process.env, E2E_LLM_KEY: 'test-key', BIOALCHEMY_LOG_LEVEL: 'warn' };

export function cli(args: string[], timeout = 300_000): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env, timeout });
}

/** `run --until-idle` in a child, async so an in-process test server can answer it. */
export function runUntilIdle(
  config: string,
  opts: { killAfterMs?: number; extraArgs?: string[] } = {},
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [BIN, 'run', '--until-idle', '--config', config, ...(opts.extraArgs ?? [])],
      {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c;
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c;
    });
    const timer =
      opts.killAfterMs === undefined ? null : setTimeout(() => child.kill('SIGKILL'), opts.killAfterMs);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (timer) clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** The numbers of the summary's processor lines: `grade in 40 -> qa.graded 25, qa.rejected 13, dead letters 2`. */
export function summaryCounts(stdout: string): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const m of stdout.matchAll(/^ {2}(\S+)\s+in (\d+) -> (.*)$/gm)) {
    const counts: Record<string, number> = { in: Number(m[2]) };
    for (const part of m[3]!.split(', ')) {
      const [, name, n] = part.match(/^(.*) (\d+)$/)!;
      counts[name!] = Number(n);
    }
    out[m[1]!] = counts;
  }
  return out;
}

/** The summary's passages line: `passages  questions 12, irrelevant 3, dead-letter 2`. */
export function passageCounts(stdout: string): Record<string, number> {
  const line = stdout.match(/^ {2}passages {2}(.*)$/m)?.[1] ?? '';
  return Object.fromEntries(
    line
      .split(', ')
      .filter(Boolean)
      .map((part) => {
        const [, name, n] = part.match(/^(.*) (\d+)$/)!;
        return [name!, Number(n)];
      }),
  );
}

/** Adds up as the pipeline promises: every input of grade and classify ends in exactly one place. */
export function expectSummaryAddsUp(
  counts: Record<string, Record<string, number>>,
  expect: (v: unknown) => { toBe(x: unknown): void },
): void {
  const g = counts.grade!;
  expect(g.in).toBe(counts.extract!['qa.candidates'] ?? 0);
  expect(g.in).toBe((g['qa.graded'] ?? 0) + (g['qa.rejected'] ?? 0) + (g['dead letters'] ?? 0));
  const c = counts.classify!;
  expect(c.in).toBe(g['qa.graded'] ?? 0);
  expect(c.in).toBe((c['qa.classified'] ?? 0) + (c['dead letters'] ?? 0));
}
