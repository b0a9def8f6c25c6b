import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeApi, fixture, json, type Route, startFakeApi } from './fake-api.js';

// `bioalchemy poll` as separate processes over one data folder: what one process learnt (a stall,
// a Retry-After) is in the log for the next; exit statuses as its --help documents them.

const BIN = new URL('../../../bin/bioalchemy.js', import.meta.url).pathname;

/** The CLI as a child process; asynchronous, so the fake API in this process can answer it. */
function cli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env } });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

let api: FakeApi | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

async function setup(route: Route) {
  api = await startFakeApi(route);
  const dir = mkdtempSync(join(tmpdir(), 'poll-cli-'));
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      log: `file:${join(dir, 'data')}`,
      sources: [
        {
          kind: 'pubmed',
          since: '2024-03-04',
          baseUrl: `${api.url}/entrez/eutils/`,
          requestsPerSecond: 100,
          http: { retries: 0 },
        },
      ],
    }),
  );
  return { api, config };
}

describe('bioalchemy poll across processes', () => {
  it('under a 1-hour Retry-After, poll --once says so, exits 4 and asks the host nothing', {
    timeout: 120_000,
  }, async () => {
    const { api, config } = await setup(() => ({
      status: 429,
      headers: { 'retry-after': '3600' },
      body: fixture('faults/ncbi-429.json'),
    }));
    const first = await cli(['poll', '--once', '--config', config]);
    expect(first.code).toBe(4);
    expect(first.out).toMatch(
      /pubmed: paused upstream: 127\.0\.0\.1:\d+ asked not to be called before \S+ \(HTTP 429 with Retry-After 3600 s\)/,
    );
    expect(api.seen).toHaveLength(1);
    const second = await cli(['poll', '--once', '--config', config]);
    expect(second.code).toBe(4);
    expect(api.seen).toHaveLength(1);
  });

  it("when stalled exits 3 with NCBI's words; status shows it; only --skip gives the day up, naming who", {
    timeout: 120_000,
  }, async () => {
    const { config } = await setup((req) =>
      req.path.endsWith('esearch.fcgi') ? json(fixture('faults/esearch-error.json')) : { status: 404 },
    );
    const stalled = await cli(['poll', '--once', '--config', config]);
    expect(stalled.code).toBe(3);
    expect(stalled.out).toContain('pubmed: stalled since');
    expect(stalled.out).toContain(
      "NCBI ESearch: Search Backend failed: Couldn't resolve #pmsearch3.pmsearch.ext, the address table is empty.",
    );
    const status = await cli(['status', '--json', '--config', config]);
    const poller = status.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.poller === 'pubmed') as { cursor: string | null; stalled: { attempts: number } };
    expect(poller).toMatchObject({ cursor: null, stalled: { attempts: 1 } });
    const shown = await cli(['status', '--config', config]);
    expect(shown.out).toMatch(
      /pubmed \(pubmed:\w+\): STALLED for 0 min \(since \S+, 1 attempt\(s\)\): NCBI ESearch: Search Backend failed/,
    );
    expect(shown.out).toMatch(/to give that page up: bioalchemy poll --skip pubmed:\w+ 'null'/);

    const skipped = await cli(['poll', '--skip', 'pubmed', 'null', '--config', config], {
      BIOALCHEMY_OPERATOR: 'curator@lab',
    });
    expect(skipped.code).toBe(0);
    expect(skipped.out).toContain('pubmed: skipped every PMID of EDAT 2024-03-04');
    const dlq = await cli(['consume', 'dlq', '--config', config]);
    const dead = dlq.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { code: string; reason: string });
    expect(dead).toEqual([
      expect.objectContaining({
        code: 'skipped-by-operator',
        reason: expect.stringMatching(
          /^skipped by operator curator@lab: every PMID of EDAT 2024-03-04 \(stalled since /,
        ),
      }),
    ]);
    // The next day is not given up by that: it stalls in its turn.
    const next = await cli(['poll', '--once', '--config', config]);
    expect(next.code).toBe(3);
    expect(next.out).toContain('"day":"2024-03-05"');
  });
});
