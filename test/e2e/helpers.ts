import { type ChildProcess, type SpawnSyncReturns, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BAND_COUNT } from '../../processors/qa/near-duplicates.js';
import type { ClassifiedQa, QaWithdrawal } from '../../schemas/index.js';
import { openRuntime } from '../../topology/runtime/open.js';
import { readAll } from '../conformance/suite.js';

export const BIN = new URL('../../bin/bioalchemy.js', import.meta.url).pathname;
export const FIXTURES = new URL('../fixtures/sources/', import.meta.url).pathname;
/** The fixture articles the pipeline runs are fed: the JATS folder and the MEDLINE sample. */
export const FIXTURE_ARTICLES = [`${FIXTURES}jats`, `${FIXTURES}medline/pubmed-sample.xml`];

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

export function cli(args: string[], input?: string, timeout = 300_000): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env, timeout, input });
}

/**
 * `ingest` of these inputs, then `run --until-idle`; throws with the command's stderr where either
 * fails (this module is also used outside vitest, by the chaos suite). The run's result.
 */
export async function ingestAndRun(
  config: string,
  inputs: string[] = FIXTURE_ARTICLES,
): Promise<ChildResult> {
  const ingest = cli(['ingest', ...inputs, '--config', config]);
  if (ingest.status !== 0) throw new Error(`ingest exited ${ingest.status}:\n${ingest.stderr}`);
  const run = await runUntilIdle(config);
  if (run.code !== 0) throw new Error(`run exited ${run.code}:\n${run.stderr}`);
  return run;
}

/** The values of one topic of a workspace's log, opened for this read alone. */
export async function topicValues<T = unknown>(dir: string, topic: string): Promise<T[]> {
  const runtime = await openRuntime(`file:${dir}/log`);
  try {
    return (await readAll(runtime, topic)).map((r) => r.value as T);
  } finally {
    await runtime.close();
  }
}

/** The dataset as its readers see it: classified QA less those withdrawn since (qa.withdrawn). */
export function keptQa(
  classified: readonly ClassifiedQa[],
  withdrawn: readonly QaWithdrawal[],
): ClassifiedQa[] {
  const gone = new Set(withdrawn.map((w) => w.qaId));
  return classified.filter((q) => !gone.has(q.candidate.id));
}

/** keptQa of an embedded workspace's log. */
export async function keptValues(dir: string): Promise<ClassifiedQa[]> {
  return keptQa(
    await topicValues<ClassifiedQa>(dir, 'qa.classified'),
    await topicValues<QaWithdrawal>(dir, 'qa.withdrawn'),
  );
}

/** The run summary's "N requests sent, retries included: answered N, timeout N, ...", by outcome. */
export function requestsByOutcome(summary: string): Record<string, number> {
  const sent = /requests sent, retries included: ([^)]*)\)/.exec(summary)?.[1] ?? '';
  return Object.fromEntries(
    sent.split(', ').flatMap((part) => {
      const m = /^(.*) (\d+)$/.exec(part);
      return m ? [[m[1]!, Number(m[2])]] : [];
    }),
  );
}

/** `run --until-idle` in a child; see cliAsync. */
export function runUntilIdle(
  config: string,
  opts: CliAsyncOptions & { extraArgs?: string[] } = {},
): Promise<ChildResult> {
  return cliAsync(['run', '--until-idle', '--config', config, ...(opts.extraArgs ?? [])], opts);
}

export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** From the spawn to the exit. */
  seconds: number;
}

export interface CliAsyncOptions {
  /** SIGKILL the child this long after it logs "running". */
  killAfterRunningMs?: number;
  /** Over the environment every CLI child gets (E2E_LLM_KEY among it). */
  env?: Record<string, string>;
  /** Called with the child once spawned (to signal it). */
  onStart?: (child: ChildProcess) => void;
}

/**
 * The CLI in a child, async: a command that talks to the in-process test server must not block
 * this process's event loop (spawnSync would). With killAfterRunningMs, SIGKILLs it that long
 * after it logs "running".
 */
export function cliAsync(args: string[], opts: CliAsyncOptions = {}): Promise<ChildResult> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const kill = opts.killAfterRunningMs;
    const child = spawn(
      process.execPath,
      [BIN, ...args],
      // At info, so the "running" line tells when the processors have started.
      {
        env: { ...env, BIOALCHEMY_LOG_LEVEL: kill === undefined ? 'warn' : 'info', ...opts.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    let timer: NodeJS.Timeout | null = null;
    child.stdout.on('data', (c: Buffer) => {
      stdout += c;
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c;
      if (kill !== undefined && !timer && stderr.includes('"msg":"running"'))
        timer = setTimeout(() => child.kill('SIGKILL'), kill);
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (timer) clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, seconds: (performance.now() - started) / 1000 });
    });
    opts.onStart?.(child);
  });
}

/** Synthetic articles with distinct, English, biology-flavoured abstracts, as JSON lines for `produce`. */
export function syntheticArticles(n: number): string {
  const vocabulary = (
    'mitochondria ribosome chloroplast transcription translation kinase phosphatase receptor membrane ' +
    'cytoskeleton microtubule chromatin histone methylation acetylation promoter enhancer silencer operon ' +
    'plasmid bacteriophage biofilm quorum sensing symbiosis parasitism predation pollination germination ' +
    'photosynthesis respiration glycolysis fermentation apoptosis autophagy mitosis meiosis recombination ' +
    'mutation selection drift migration speciation phylogeny genome proteome metabolome neuron synapse'
  ).split(' ');
  let seed = 12345;
  const random = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  const word = () => vocabulary[Math.floor(random() * vocabulary.length)]!;
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const sentences = Array.from(
      { length: 6 },
      () =>
        `The ${word()} of the ${word()} increased with ${word()} and ${word()} in the ${word()} of cells ${i}.`,
    );
    lines.push(
      JSON.stringify({
        id: `doi:10.5555/synthetic.${i}`,
        source: 'test',
        doi: `10.5555/synthetic.${i}`,
        pmid: null,
        pmcid: null,
        title: `Synthetic study ${i} of ${word()} and ${word()}`,
        abstract: sentences.join(' '),
        sections: [],
        journal: null,
        published: '2024-03',
        licence: 'CC BY 4.0',
        contentHash: `synthetic-${i}`,
      }),
    );
  }
  return `${lines.join('\n')}\n`;
}

/** The numbers of the summary's processor lines: `grade in 40 -> qa.graded 25, qa.rejected 13, dead letters 2`. */
export function summaryCounts(stdout: string): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const m of stdout.matchAll(/^ {2}(\S+)\s+in (\d+) -> (.*)$/gm)) {
    const counts: Record<string, number> = { in: Number(m[2]) };
    for (const part of m[3]!.split(', ')) {
      // `qa.bands 170 (10 QA)`: the QA count is what adds up.
      const [, name, n, qa] = part.match(/^(.*?) (\d+)(?: \((\d+) QA\))?$/)!;
      counts[name!] = Number(qa ?? n);
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
  expect(g.in).toBe((g['qa.bands'] ?? 0) + (g['qa.rejected'] ?? 0) + (g['dead letters'] ?? 0));
  // The band owners answer for every band of every QA, and the join decides each QA once.
  const bands = (g['qa.bands'] ?? 0) * BAND_COUNT;
  expect(counts['dedup-bands']?.in ?? 0).toBe(bands);
  const d = counts.dedup ?? { in: 0 };
  expect(d.in).toBe(bands);
  expect(g['qa.bands'] ?? 0).toBe((d['qa.graded'] ?? 0) + (d['qa.rejected'] ?? 0));
  const c = counts.classify!;
  expect(c.in).toBe(d['qa.graded'] ?? 0);
  expect(c.in).toBe((c['qa.classified'] ?? 0) + (c['dead letters'] ?? 0));
}
