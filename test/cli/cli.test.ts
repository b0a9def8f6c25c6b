import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { sampleArticle } from '../fixtures/records.js';
import { start as startLlmServer } from '../llm-server/server.js';

const BIN = new URL('../../bin/bioalchemy.js', import.meta.url).pathname;

function cli(args: string[], input?: string, env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    input,
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Resolves with everything the child wrote to stdout+stderr once `pattern` appears in it. */
function waitFor(child: ChildProcess, pattern: RegExp, deadlineMs = 20_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(
      () => reject(new Error(`no ${pattern} within ${deadlineMs} ms:\n${seen}`)),
      deadlineMs,
    );
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (pattern.test(seen)) {
        clearTimeout(timer);
        resolve(seen);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
  });
}

describe('bioalchemy CLI', () => {
  const data = mkdtempSync(join(tmpdir(), 'cli-'));

  it('describes the pipeline topology', () => {
    const r = cli(['topology', 'describe']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('articles ──► extract ──► qa.candidates');
  });

  it('exports one JSON Schema per record', () => {
    const out = join(data, 'schemas');
    expect(cli(['schemas', 'export', out]).code).toBe(0);
    expect(readdirSync(out)).toContain('graded-qa.schema.json');
  });

  it('refuses an invalid record with one line naming the field, and writes nothing', () => {
    const good = JSON.stringify(sampleArticle);
    const bad = JSON.stringify({ ...sampleArticle, published: 'last spring' });
    const r = cli(['produce', 'articles', '--data', data], `${good}\n${bad}\n`);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^bioalchemy: line 2: articles: published: /);
    expect(cli(['consume', 'articles', '--data', data]).stdout).toBe('');
  });

  it('says plainly why there is nothing to export: no articles, or nothing accepted yet', () => {
    const empty = mkdtempSync(join(tmpdir(), 'cli-export-'));
    const out = join(empty, 'train.jsonl');
    const none = cli(['export', '--format', 'jsonl', '--out', out, '--data', empty]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('no articles yet');
    expect(cli(['produce', 'articles', '--data', empty], `${JSON.stringify(sampleArticle)}\n`).code).toBe(0);
    const nothing = cli(['export', '--format', 'jsonl', '--out', out, '--data', empty]);
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toContain(
      'nothing accepted yet, so nothing to export: 1 articles, 0 candidate QA',
    );
  });

  it('produces valid records and consumes them back', () => {
    const lines = [sampleArticle, { ...sampleArticle, id: 'pmid:2', doi: null, pmid: '2' }].map((a) =>
      JSON.stringify(a),
    );
    const p = cli(['produce', 'articles', '--key', 'id', '--data', data], `${lines.join('\n')}\n`);
    expect(p.code).toBe(0);
    const c = cli(['consume', 'articles', '--with-meta', '--data', data]);
    const records = c.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(records.map((r) => r.key).sort()).toEqual(['doi:10.1000/xyz', 'pmid:2']);
    expect(records[0].value.mesh).toEqual([]);
    expect(
      cli(['consume', 'articles', '--limit', '1', '--data', data]).stdout.trim().split('\n'),
    ).toHaveLength(1);
  });

  it('prints usage with options, environment variables and examples for every command', () => {
    const top = cli(['--help']);
    expect(top.code).toBe(0);
    for (const command of ['run', 'ingest', 'poll', 'produce', 'consume', 'topology', 'schemas'])
      expect(top.stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
    for (const env of ['BIOALCHEMY_CONFIG', 'BIOALCHEMY_DATA', 'BIOALCHEMY_LOG_LEVEL'])
      expect(top.stdout).toContain(env);
    for (const args of [
      ['run'],
      ['ingest'],
      ['poll'],
      ['produce'],
      ['consume'],
      ['topology', 'describe'],
      ['schemas', 'export'],
      ['schemas'],
    ]) {
      const help = cli([...args, '--help']);
      expect(help.code, args.join(' ')).toBe(0);
      expect(help.stdout, args.join(' ')).toMatch(/^Usage: bioalchemy /);
      expect(help.stdout, args.join(' ')).toMatch(/Examples?:\n {2}\$ bioalchemy /);
      // Global options show in every command's help, with their environment variables.
      expect(help.stdout, args.join(' ')).toContain('(env: BIOALCHEMY_DATA)');
    }
    expect(cli(['ingest', '--help']).stdout).toContain('--format <format>');
    // The registry check needs one: on the embedded log it is a usage mistake that says so.
    const check = cli(['schemas', '--check']);
    expect([check.code, check.stderr]).toEqual([2, expect.stringContaining('needs a Schema Registry')]);
    // Ten CLI starts one after another: on a loaded machine each can take seconds.
  }, 180_000);

  it('takes the global flags from the environment, the flag winning over it', () => {
    const lines = `${JSON.stringify(sampleArticle)}\n`;
    const other = mkdtempSync(join(tmpdir(), 'cli-env-'));
    const empty = mkdtempSync(join(tmpdir(), 'cli-empty-'));
    expect(cli(['produce', 'articles'], lines, { BIOALCHEMY_DATA: other }).code).toBe(0);
    expect(
      cli(['consume', 'articles'], undefined, { BIOALCHEMY_DATA: other }).stdout.trim().split('\n'),
    ).toHaveLength(1);
    expect(cli(['consume', 'articles', '--data', empty], undefined, { BIOALCHEMY_DATA: other }).stdout).toBe(
      '',
    );
  });

  it('rejects a usage mistake with one clear line and exit status 2', () => {
    for (const [args, message] of [
      [['--frobnicate'], /unknown option '--frobnicate'/],
      [['ingest', '--bogus'], /unknown option '--bogus'/],
      [['ingest'], /missing required argument 'paths'/],
      [['launch'], /unknown command 'launch'/],
      [['consume', 'nope'], /unknown topic "nope"/],
      [['consume', 'articles', '--limit', 'many'], /--limit <n>.*many.*whole number/],
      [['ingest', 'x', '--format', 'docx'], /--format <format>.*docx/],
      [['run', '--log-level', 'loud'], /--log-level <level>.*loud/],
    ] as const) {
      const r = cli([...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(r.stderr, args.join(' ')).toMatch(/^bioalchemy: /);
      expect(r.stderr, args.join(' ')).toMatch(message);
    }
  });

  it('gives one clear line and exit status 1 for a bad config', () => {
    const config = join(data, 'bad.json');
    writeFileSync(config, JSON.stringify({ log: 'file:x', llm: { timeoutMs: -1 } }));
    const r = cli(['run', '--config', config]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^bioalchemy: config .*bad\.json: llm\.timeoutMs: /);
    writeFileSync(config, JSON.stringify({ processors: { extract: { commitIntervalMs: 0 } } }));
    const interval = cli(['run', '--config', config]);
    expect(interval.code).toBe(1);
    expect(interval.stderr).toMatch(
      /^bioalchemy: config .*bad\.json: processors\.extract\.commitIntervalMs: /,
    );
  });

  it('runs until SIGINT and shuts down cleanly, serving metrics meanwhile', async () => {
    const port = 20000 + Math.floor(Math.random() * 20000);
    const llm = await startLlmServer();
    const config = join(data, 'run.json');
    writeFileSync(config, JSON.stringify({ llm: { baseUrl: llm.url, apiKeyEnv: 'CLI_TEST_KEY' } }));
    const child = spawn(
      process.execPath,
      [
        BIN,
        'run',
        '--config',
        config,
        '--data',
        data,
        '--metrics-port',
        String(port),
        '--port',
        '0',
        '--dashboard-port',
        '0',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CLI_TEST_KEY: 'k' } },
    );
    onTestFinished(() => llm.stop());
    await waitFor(child, /"msg":"running"/);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toContain('bioalchemy_transaction_seconds');
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const stopped = waitFor(child, /"msg":"stopped"/);
    child.kill('SIGINT');
    await stopped;
    expect(await exited).toBe(0);
  });
});
