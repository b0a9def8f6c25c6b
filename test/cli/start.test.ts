import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleArticle } from '../fixtures/records.js';

const BIN = fileURLToPath(new URL('../../bin/bioalchemy.js', import.meta.url));
const IMPORT_LOG = fileURLToPath(new URL('./import-log.mjs', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'cli-start-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

// dist/ as `npm ci` leaves it, brought up to date with the source (tsc is incremental). Type
// errors (status 2, the JavaScript written all the same) are `npm run lint`'s to fail on.
beforeAll(() => {
  const built = spawnSync(process.execPath, [fileURLToPath(new URL('../../bin/build.js', import.meta.url))], {
    encoding: 'utf8',
  });
  expect([0, 2], built.stdout + built.stderr).toContain(built.status);
});

/** The compiled CLI as installed (dist/), not the source the other tests run. */
const compiled = { ...process.env, BIOALCHEMY_FROM_SOURCE: '' };

/** A shell pipeline through a real pipe; prints the CLI's exit status last (PIPESTATUS). */
function pipeline(cli: string, reader: string, env: NodeJS.ProcessEnv = process.env) {
  const r = spawnSync('bash', ['-c', `"${BIN}" ${cli} | ${reader}; echo "cli exit \${PIPESTATUS[0]}"`], {
    encoding: 'utf8',
    env,
  });
  const lines = r.stdout.trimEnd().split('\n');
  return { status: lines.pop(), out: lines, stderr: r.stderr };
}

/** The node_modules packages a CLI start resolved, by name. */
function packagesLoaded(args: string[]): Set<string> {
  const log = join(work, `imports-${args.join('-')}.log`);
  const r = spawnSync(process.execPath, ['--import', IMPORT_LOG, BIN, ...args], {
    encoding: 'utf8',
    env: { ...compiled, BIOALCHEMY_IMPORT_LOG: log },
  });
  expect(r.status, r.stderr).toBeLessThanOrEqual(2);
  const urls = readFileSync(log, 'utf8').trim().split('\n');
  const names = urls.flatMap((u) => u.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//)?.[1] ?? []);
  expect(urls.some((u) => u.includes('/dist/cli/main.js'))).toBe(true);
  return new Set(names);
}

const HEAVY = [
  'kafkajs',
  'node-rdkafka',
  '@confluentinc/schemaregistry',
  'fastify',
  '@clickhouse/client',
  'chdb',
  'echarts',
  'pdfjs-dist',
  'openai',
  'better-sqlite3',
  'pino',
  'zod',
  'tsx',
];

describe('bioalchemy start-up and pipes', () => {
  it("--help, --version, a command's --help and a usage mistake load commander alone", () => {
    for (const args of [['--help'], ['--version'], ['run', '--help'], ['consume'], ['no-such-command']]) {
      const loaded = packagesLoaded(args);
      expect([...loaded], args.join(' ')).toEqual(['commander']);
      for (const heavy of HEAVY) expect(loaded.has(heavy), `${args.join(' ')} loads ${heavy}`).toBe(false);
    }
  });

  it('--help | head -3 prints three lines, nothing on stderr, and ends with status 0 (compiled and from source)', () => {
    for (const env of [compiled, process.env]) {
      const r = pipeline('--help', 'head -3', env);
      expect(r.out).toHaveLength(3);
      expect(r.out[0]).toMatch(/^Usage: bioalchemy/);
      expect(r.stderr).toBe('');
      expect(r.status).toBe('cli exit 0');
      // A reader gone before the first byte is written.
      const gone = pipeline('--help', 'true', env);
      expect(gone.stderr).toBe('');
      expect(gone.status).toBe('cli exit 0');
    }
  });

  it('consume | head -1 prints one record and ends quietly with status 0 when head goes away', () => {
    const data = join(work, 'data');
    // Far more than a pipe holds (64 KiB), so the CLI is still writing when head exits.
    const articles = Array.from({ length: 400 }, (_, i) =>
      JSON.stringify({ ...sampleArticle, id: `${sampleArticle.id}-${i}`, abstract: 'x'.repeat(1000) }),
    );
    const produced = spawnSync(BIN, ['produce', 'articles', '--data', data], {
      input: `${articles.join('\n')}\n`,
      encoding: 'utf8',
    });
    expect(produced.status, produced.stderr).toBe(0);
    for (const env of [compiled, process.env]) {
      const r = pipeline(`consume articles --data "${data}"`, 'head -1', env);
      expect(r.out).toHaveLength(1);
      expect(JSON.parse(r.out[0]!).id).toMatch(/-\d+$/);
      expect(r.stderr).toBe('');
      expect(r.status).toBe('cli exit 0');
    }
  });
});
