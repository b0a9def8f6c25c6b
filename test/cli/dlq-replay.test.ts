import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, keptValues, runUntilIdle, topicValues, workspace } from '../e2e/helpers.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, start } from '../llm-server/server.js';

const ARTICLES = new URL('../../examples/articles', import.meta.url).pathname;
/** A data folder with examples/articles (and `extraInputs`) ingested, for the test server at `url`. */
function ingested(url: string, extraInputs: string[] = []) {
  const ws = workspace(url, {
    llm: {
      baseUrl: url,
      apiKeyEnv: 'E2E_LLM_KEY',
      model: 'test-model',
      retry: { baseDelayMs: 5, maxDelayMs: 50 },
      circuit: { failureThreshold: 8, probeIntervalMs: 500 },
    },
  });
  const ingest = cli(['ingest', ARTICLES, ...extraInputs, '--config', ws.config]);
  if (ingest.status !== 0) throw new Error(`ingest: ${ingest.stderr}`);
  return ws;
}

const ids = (qa: { candidate: { id: string } }[]) => qa.map((q) => q.candidate.id).sort();

describe('bioalchemy dlq replay', () => {
  let server: LlmServer;
  let control: string[];

  beforeAll(async () => {
    server = await start({ responder: pipelineResponder });
    const good = ingested(server.url);
    const run = await runUntilIdle(good.config);
    expect(run.code, run.stderr).toBe(0);
    control = ids(await keptValues(good.dir));
    expect(control.length).toBeGreaterThan(0);
  }, 300_000);
  afterAll(() => server?.stop());

  it('re-drives dead letters of a fault fixed since, once: a run then gives the QA of a good run; a second replay adds nothing', async () => {
    // An empty file: a dead letter read from a file, which no replay can re-drive.
    const empty = join(mkdtempSync(join(tmpdir(), 'dlq-replay-empty-')), 'empty.jsonl');
    writeFileSync(empty, '');
    // Two requests refused, each its input's own (the others answered): two dead letters.
    server.setFaults({ sequence: ['bad-request', 'bad-request'] });
    const ws = ingested(server.url, [empty]);
    const first = await runUntilIdle(ws.config);
    server.setFaults({});
    expect(first.code, first.stderr).toBe(0);
    const refused = (await topicValues<{ code: string }>(ws.dir, 'dlq')).filter(
      (d) => d.code === 'llm-request-refused',
    );
    expect(refused).toHaveLength(2);
    expect(ids(await keptValues(ws.dir)).length).toBeLessThan(control.length);

    const nothing = cli(['dlq', 'replay', '--processor', 'classify', '--config', ws.config]);
    expect(nothing.status).toBe(0);
    expect(nothing.stdout).toBe('no dead letter matches the filter: nothing to replay\n');

    const articlesBefore = (await topicValues(ws.dir, 'articles')).length;
    const replayed = cli(['dlq', 'replay', '--config', ws.config]);
    expect(replayed.status, replayed.stderr).toBe(0);
    expect(replayed.stdout).toMatch(
      /dead letter\(s\) match: replayed 2 \(\d input\(s\) appended again: articles \d\), 0 replayed before, 1 cannot be replayed/,
    );
    expect(replayed.stdout).toMatch(
      /cannot replay \w+ \(empty-file, .*\): read from the file .*empty\.jsonl, not from the log: ingest the file again/,
    );
    const appended = (await topicValues(ws.dir, 'articles')).length - articlesBefore;
    expect(appended).toBeGreaterThanOrEqual(1);
    expect(appended).toBeLessThanOrEqual(2);

    const again = await runUntilIdle(ws.config);
    expect(again.code, again.stderr).toBe(0);
    expect(ids(await keptValues(ws.dir))).toEqual(control);

    // Once: a second replay finds them replayed, appends nothing, and a run changes nothing.
    const second = cli(['dlq', 'replay', '--code', 'llm-request-refused', '--config', ws.config]);
    expect(second.status).toBe(0);
    expect(second.stdout).toMatch(/match: replayed 0 .*, 2 replayed before, 0 cannot be replayed/);
    expect((await topicValues(ws.dir, 'articles')).length).toBe(articlesBefore + appended);
    expect((await topicValues(ws.dir, 'dlq.replayed')).length).toBe(2);
  }, 300_000);

  it('refuses an unknown code or an unreadable time with one line, exit 2', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dlq-replay-usage-'));
    const code = cli(['dlq', 'replay', '--code', 'no-such-code', '--data', dir]);
    expect(code.status).toBe(2);
    expect(code.stderr).toMatch(/^bioalchemy: --code: unknown code "no-such-code"/);
    const since = cli(['dlq', 'replay', '--since', 'yesterday-ish', '--data', dir]);
    expect(since.status).toBe(2);
    expect(since.stderr).toMatch(/^bioalchemy: --since: not a time/);
  });
});
