import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { majorVersion, openClickHouse } from '../../analytics/clickhouse.js';
import { MIGRATIONS_DIR, readMigrations, splitStatements } from '../../analytics/migrations.js';
import { parseClickHouseUrl, redact } from '../../analytics/url.js';

describe('clickhouse URL', () => {
  it('chdb:DIR resolves against the working directory', () => {
    expect(parseClickHouseUrl('chdb:./data/chdb')).toEqual({
      backend: 'chdb',
      path: join(process.cwd(), 'data/chdb'),
    });
    expect(parseClickHouseUrl('chdb:/abs/dir')).toEqual({ backend: 'chdb', path: '/abs/dir' });
    expect(parseClickHouseUrl('chdb::memory:')).toEqual({ backend: 'chdb', path: ':memory:' });
    expect(() => parseClickHouseUrl('chdb:')).toThrow(/chdb:DIR/);
  });

  it('http(s)://user@host:port/database', () => {
    expect(parseClickHouseUrl('https://reader@ch.example:8443/bio')).toEqual({
      backend: 'http',
      origin: 'https://ch.example:8443',
      username: 'reader',
      database: 'bio',
    });
    expect(parseClickHouseUrl('http://127.0.0.1:18123')).toEqual({
      backend: 'http',
      origin: 'http://127.0.0.1:18123',
      username: 'default',
      database: 'default',
    });
  });

  it('refuses a password in the URL without repeating it', () => {
    let message = '';
    try {
      parseClickHouseUrl('http://bob:s3cret@host:8123/db');
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/CLICKHOUSE_PASSWORD/);
    expect(message).not.toContain('s3cret');
    expect(redact('http://bob:s3cret@host:8123/db')).toBe('http://bob:***@host:8123/db');
  });

  it('refuses other schemes, odd database names and query strings', () => {
    expect(() => parseClickHouseUrl('clickhouse://host')).toThrow(/chdb:DIR or http/);
    expect(() => parseClickHouseUrl('http://host/db-name')).toThrow(/database/);
    expect(() => parseClickHouseUrl('http://host/db?x=1')).toThrow(/query string/);
  });

  it('a URL password never reaches a connection attempt', async () => {
    await expect(openClickHouse('http://u:pw@127.0.0.1:1/db')).rejects.toThrow(/CLICKHOUSE_PASSWORD/);
  });

  it('majorVersion', () => {
    expect(majorVersion('18.16.1')).toBe(18);
    expect(majorVersion('26.7.2.1')).toBe(26);
    expect(majorVersion('unknown')).toBe(0);
  });
});

describe('migration files', () => {
  it('splits like start.sh: comment lines dropped, statements end at a line ending in ;', () => {
    const sql =
      "-- head; comment;\nCREATE TABLE a (x String DEFAULT '--');\n  -- indented comment\nSELECT 1;  \nSELECT\n 2\n";
    expect(splitStatements(sql)).toEqual([
      "CREATE TABLE a (x String DEFAULT '--')",
      'SELECT 1',
      'SELECT\n 2',
    ]);
  });

  // The splitting loop is lifted out of start.sh itself and run with `q` printing (to fd 3: the
  // script sends q's stdout to /dev/null) instead of querying: if the script's rule changes, this
  // test says so before a server disagrees.
  it('splits every migration file exactly as deploy/clickhouse/start.sh does', async () => {
    const script = readFileSync(join(MIGRATIONS_DIR, '..', 'start.sh'), 'utf8');
    const begin = script.indexOf('  stmt=""\n  while IFS= read -r line');
    const endLine = script.indexOf('\n', script.indexOf('q "$stmt"', begin));
    expect(begin).toBeGreaterThan(0);
    const loop = script.slice(begin, endLine);
    const scratch = mkdtempSync(join(tmpdir(), 'bioalchemy-split-'));
    onTestFinished(() => rmSync(scratch, { recursive: true, force: true }));
    const tricky = join(scratch, 'tricky.sql');
    writeFileSync(tricky, '-- a;\nSELECT 1;\r\n\n   -- b\nSELECT\n  2 ;\n\nSELECT 3');
    const files = [...(await readMigrations()).map((m) => join(MIGRATIONS_DIR, `${m.version}.sql`)), tricky];
    for (const f of files) {
      const out = execFileSync(
        'bash',
        [
          '-c',
          `set -euo pipefail\nexec 3>&1\nq() { printf '%s\\0' "$1" >&3; }\ndie() { echo "$*" >&2; exit 1; }\nv=x\nf="$1"\n${loop}`,
          'split',
          f,
        ],
        { encoding: 'utf8' },
      );
      const byScript = out
        .split('\0')
        .slice(0, -1)
        .map((s) => s.trim());
      expect(
        splitStatements(readFileSync(f, 'utf8')).map((s) => s.trim()),
        f,
      ).toEqual(byScript);
    }
  });
});
