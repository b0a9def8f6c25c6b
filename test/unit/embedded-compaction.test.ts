import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TOMBSTONE } from '../../topology/records.js';
import { EmbeddedRuntime, MAINTENANCE_SLICE_ROWS } from '../../topology/runtime/embedded.js';
import type { TopicSpec } from '../../topology/topology.js';

const COMPACTED: TopicSpec = {
  name: 'latest',
  partitions: 2,
  compacted: true,
  retentionMs: null,
  schema: null,
  description: '',
};

/** Appends `keys` keys `versions` times each (version v of key k has value v), in appends of 5,000. */
async function fill(runtime: EmbeddedRuntime, keys: number, versions: number): Promise<void> {
  for (let v = 0; v < versions; v++) {
    for (let from = 0; from < keys; from += 5000) {
      const records = [];
      for (let k = from; k < Math.min(keys, from + 5000); k++)
        records.push({ topic: COMPACTED.name, key: `key-${k}`, value: String(v) });
      await runtime.append(records);
    }
  }
}

async function all(runtime: EmbeddedRuntime): Promise<{ key: string | null; value: string }[]> {
  const out = [];
  for (let p = 0; p < COMPACTED.partitions; p++)
    out.push(...(await runtime.read(COMPACTED.name, p, 0, 1_000_000)));
  return out.map((r) => ({ key: r.key, value: r.value }));
}

/** Counts turns of the event loop while `work` runs: a pass that never yields leaves it at 0. */
async function loopTurnsDuring<T>(work: Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0;
  let running = true;
  const tick = () => {
    if (!running) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  const result = await work;
  running = false;
  return { result, turns };
}

describe('embedded compaction', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('removes 100,000 superseded records of 200,000 in bounded slices, yielding to the event loop between them', async () => {
    const runtime = EmbeddedRuntime.open(':memory:');
    await runtime.ensureTopics([COMPACTED]);
    await fill(runtime, 100_000, 2);

    const { result: removed, turns } = await loopTurnsDuring(runtime.maintain());

    expect(removed).toBe(100_000);
    const pass = runtime.lastMaintenance;
    // Bounded in work, whatever the history: no slice touches more rows than the bound...
    expect(pass.largestSliceRows).toBeLessThanOrEqual(MAINTENANCE_SLICE_ROWS);
    expect(pass.slices).toBeGreaterThanOrEqual(100_000 / MAINTENANCE_SLICE_ROWS);
    // ...and the loop runs between slices (one turn between each two full slices at least).
    expect(turns).toBeGreaterThanOrEqual(removed / MAINTENANCE_SLICE_ROWS - 1);
    const left = await all(runtime);
    expect(left).toHaveLength(100_000);
    expect(left.every((r) => r.value === '1')).toBe(true);

    // Costs what it removes: with nothing superseded since, a pass touches no row.
    expect(await runtime.maintain()).toBe(0);
    expect(runtime.lastMaintenance.largestSliceRows).toBe(0);
    await runtime.close();
  });

  it('a tombstone removes its key, itself included, at the next pass; a later value brings the key back', async () => {
    const runtime = EmbeddedRuntime.open(':memory:');
    await runtime.ensureTopics([COMPACTED]);
    await runtime.append([
      { topic: 'latest', key: 'a', value: '1' },
      { topic: 'latest', key: 'b', value: '2' },
      { topic: 'latest', key: 'a', value: TOMBSTONE },
      { topic: 'latest', key: 'b', value: TOMBSTONE },
      { topic: 'latest', key: 'b', value: '3' },
      // A tombstone for a key never written, and a record without a key: no crash, no effect on others.
      { topic: 'latest', key: 'never', value: TOMBSTONE },
      { topic: 'latest', key: null, value: '4' },
    ]);
    expect(await runtime.maintain()).toBe(5);
    expect((await all(runtime)).sort((x, y) => x.value.localeCompare(y.value))).toEqual([
      { key: 'b', value: '3' },
      { key: null, value: '4' },
    ]);
    await runtime.close();
  });

  it('indexes a log written before compaction was indexed when it opens', async () => {
    dir = mkdtempSync(join(tmpdir(), 'compaction-'));
    let runtime = EmbeddedRuntime.open(dir);
    await runtime.ensureTopics([COMPACTED]);
    await fill(runtime, 3000, 3);
    // The old layout: no index tables.
    runtime.db.exec('DROP TABLE compaction_latest; DROP TABLE compaction_superseded');
    await runtime.close();

    runtime = EmbeddedRuntime.open(dir);
    expect(await runtime.maintain()).toBe(6000);
    const left = await all(runtime);
    expect(left).toHaveLength(3000);
    expect(left.every((r) => r.value === '2')).toBe(true);
    await runtime.close();
  });

  it('drops records past retention as a prefix of each partition, in slices', async () => {
    const runtime = EmbeddedRuntime.open(':memory:');
    const recent: TopicSpec = { ...COMPACTED, name: 'recent', compacted: false, retentionMs: 1000 };
    await runtime.ensureTopics([recent]);
    const records = Array.from({ length: 2500 }, (_, i) => ({
      topic: 'recent',
      key: null,
      value: String(i),
    }));
    await runtime.append(records);
    expect(await runtime.maintain(Date.now() - 60_000)).toBe(0);
    expect(await runtime.maintain(Date.now() + 5000)).toBe(2500);
    expect(runtime.lastMaintenance.largestSliceRows).toBeLessThanOrEqual(MAINTENANCE_SLICE_ROWS);
    await runtime.close();
  });
});
