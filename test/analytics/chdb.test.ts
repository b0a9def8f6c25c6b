import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Analytics, openClickHouse } from '../../analytics/clickhouse.js';
import { readMigrations } from '../../analytics/migrations.js';
import { insertQa, topicCounts } from '../../analytics/qa-store.js';
import { qa } from './rows.js';
import { storeSuite } from './store-suite.js';

async function freshDir(): Promise<{ dir: string; dispose(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'bioalchemy-chdb-'));
  return { dir, dispose: () => rm(dir, { recursive: true, force: true }) };
}

// Each test gets its own data directory: the store closes (and drains) chdb between them, which
// is also what proves a process can move from one directory to the next.
storeSuite({
  name: 'chdb (in-process)',
  backend: 'chdb',
  queryParams: true,
  async fresh() {
    const { dir, dispose } = await freshDir();
    return { url: `chdb:${dir}`, dispose };
  },
});

describe('chdb specifics', () => {
  const open: Analytics[] = [];
  const dirs: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const a of open.splice(0)) await a.close();
    for (const d of dirs.splice(0)) await d();
  });

  it('keeps its data across a close and a reopen of the same directory', async () => {
    const { dir, dispose } = await freshDir();
    dirs.push(dispose);
    const first = await openClickHouse(`chdb:${dir}`);
    await insertQa(first, [qa('q1', ['genetics'])]);
    await first.close();
    const again = await openClickHouse(`chdb:${dir}`);
    open.push(again);
    expect(again.migrationsApplied).toEqual([]);
    expect(await topicCounts(again)).toEqual([{ category: 'genetics', n: 1 }]);
  });

  it('two concurrent opens of a new directory migrate it once (0002 is an ALTER: twice would fail)', async () => {
    const { dir, dispose } = await freshDir();
    dirs.push(dispose);
    const [a, b] = await Promise.all([openClickHouse(`chdb:${dir}`), openClickHouse(`chdb:${dir}`)]);
    open.push(a, b);
    expect([...a.migrationsApplied, ...b.migrationsApplied].sort()).toEqual(
      (await readMigrations()).map((m) => m.version),
    );
  });

  it('shares one directory between two opens, and refuses a second directory clearly', async () => {
    const one = await freshDir();
    const two = await freshDir();
    dirs.push(one.dispose, two.dispose);
    const a = await openClickHouse(`chdb:${one.dir}`);
    open.push(a);
    const b = await openClickHouse(`chdb:${one.dir}`);
    open.push(b);
    await insertQa(a, [qa('q1', ['genetics'])]);
    expect(await topicCounts(b)).toEqual([{ category: 'genetics', n: 1 }]);
    await expect(openClickHouse(`chdb:${two.dir}`)).rejects.toThrow(/one data directory per process/);
  });
});
