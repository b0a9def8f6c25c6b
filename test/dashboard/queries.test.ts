import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openClickHouse } from '../../analytics/clickhouse.js';
import { windowOf } from '../../analytics/dashboard-queries.js';
import { dashboardQueriesSuite } from './queries-suite.js';

describe('windowOf', () => {
  it('keeps every span within 240 buckets on a whole step, the last bucket holding now', () => {
    const now = Date.UTC(2026, 6, 1, 12, 0, 30);
    for (const span of [60, 3600, 6 * 3600, 86_400, 7 * 86_400]) {
      const w = windowOf(span, now);
      expect((w.to - w.from) / w.step).toBeLessThanOrEqual(240);
      expect(w.to - w.from).toBeGreaterThanOrEqual(span);
      expect(w.from % w.step).toBe(0);
      expect(w.to).toBeGreaterThan(now / 1000);
      expect(w.to - w.step).toBeLessThanOrEqual(now / 1000);
    }
    expect(windowOf(3600, now).step).toBe(60);
    expect(windowOf(7 * 86_400, now).step).toBe(3600);
  });
});

dashboardQueriesSuite('chdb', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'bioalchemy-dash-'));
  const a = await openClickHouse(`chdb:${dir}`);
  return {
    ...a,
    close: async () => {
      await a.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
