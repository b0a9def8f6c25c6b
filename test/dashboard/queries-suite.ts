import { afterEach, describe, expect, it } from 'vitest';
import type { Analytics } from '../../analytics/clickhouse.js';
import {
  latestMixState,
  llmSeries,
  llmUsage,
  mixPoints,
  qaRates,
  qaTotals,
  rewardSeries,
  windowOf,
} from '../../analytics/dashboard-queries.js';
import { generateItems } from '../sampler/generated.js';
import { insertCalls, insertMixHistory, insertQaRows, insertRewards, SOURCES } from './data.js';

const HOUR = 3600;

/** The panel queries against a fresh database from `open`: exact figures from generated rows. */
export function dashboardQueriesSuite(name: string, open: () => Promise<Analytics>): void {
  describe(`dashboard panel queries on ${name}`, () => {
    const opened: Analytics[] = [];
    const fresh = async () => {
      const a = await open();
      opened.push(a);
      return a;
    };
    afterEach(async () => {
      for (const a of opened.splice(0)) await a.close();
    });
    const now = Date.UTC(2026, 6, 1, 12, 0, 0);
    const to = now / 1000;

    it('totals and QA and articles per bucket by source and journal, only inside the window', async () => {
      const a = await fresh();
      // The window of the last hour is 60 one-minute buckets, the last one holding now.
      await insertQaRows(a, 1000, { from: to - HOUR + 60, to });
      // Older rows: counted in the totals, outside a one-hour window.
      await insertQaRows(a, 100, { from: to - 3 * HOUR, to: to - 2 * HOUR, seed: 9, idPrefix: 'old' });
      expect(await qaTotals(a)).toEqual({ qa: 1100, accepted: 990, articles: 220, latestSeconds: to - 4 });
      const w = windowOf(HOUR, now);
      expect(w.step).toBe(60);
      const bySource = await qaRates(a, w, 'source');
      expect(bySource.reduce((s, p) => s + p.qa, 0)).toBe(1000);
      for (const source of SOURCES)
        expect(bySource.filter((p) => p.key === source).reduce((s, p) => s + p.qa, 0)).toBe(250);
      expect(new Set(bySource.map((p) => p.t)).size).toBe(59);
      for (const p of bySource) expect(p.t % 60).toBe(0);
      const byJournal = await qaRates(a, w, 'journal');
      expect(byJournal.filter((p) => p.key === 'PLOS Genetics').reduce((s, p) => s + p.qa, 0)).toBe(250);
      // A row written twice (a replay) counts once.
      await insertQaRows(a, 1000, { from: to - HOUR + 60, to });
      expect((await qaRates(a, w, 'source')).reduce((s, p) => s + p.qa, 0)).toBe(1000);
    });

    it('a week of mix versions comes back as the last version of each bucket', async () => {
      const a = await fresh();
      const versions = await insertMixHistory(a, { from: to - 7 * 24 * HOUR, to, everySeconds: 60 });
      expect(versions).toBe(7 * 24 * 60);
      const w = windowOf(7 * 24 * HOUR, now);
      const points = await mixPoints(a, w);
      expect(points.length).toBeLessThanOrEqual(240);
      expect(points.length).toBeGreaterThan(150);
      expect(points.at(-1)!.version).toBe(versions);
      // Falling drift, as generated.
      expect(points[0]!.tvdTarget).toBeGreaterThan(points.at(-1)!.tvdTarget);
      const latest = JSON.parse((await latestMixState(a))!) as { version: number };
      expect(latest.version).toBe(versions);
      const day = await mixPoints(a, windowOf(24 * HOUR, now));
      expect(day.every((p) => p.atSeconds >= to - 24 * HOUR - 900)).toBe(true);
    });

    it('LLM usage by stage and model, today against all time, latency quantiles of paid calls', async () => {
      const a = await fresh();
      // 600 calls over the last 24 hours: half of them today (UTC).
      const dayStart = Math.floor(now / 86_400_000) * 86_400;
      await insertCalls(a, 600, { from: dayStart - 12 * HOUR, to: to });
      const usage = await llmUsage(a, dayStart);
      expect(usage.reduce((s, u) => s + u.calls, 0)).toBe(600);
      expect(usage.reduce((s, u) => s + u.journalHits, 0)).toBe(60);
      expect(usage.reduce((s, u) => s + u.costUsd, 0)).toBeCloseTo(0.54, 6);
      expect(usage.reduce((s, u) => s + u.costTodayUsd, 0)).toBeCloseTo(0.27, 2);
      for (const u of usage) {
        expect(u.p50Ms).toBeGreaterThanOrEqual(100);
        expect(u.p95Ms).toBeGreaterThanOrEqual(u.p50Ms);
      }
      const series = await llmSeries(a, windowOf(2 * 24 * HOUR, now));
      expect(series.reduce((s, p) => s + p.calls, 0)).toBe(600);
    });

    it('mean reward per topic and run over time', async () => {
      const a = await fresh();
      await insertQaRows(a, 300, { from: to - HOUR, to });
      await insertRewards(a, 300);
      const points = await rewardSeries(a, windowOf(HOUR, Date.now()));
      const items = generateItems(300, 1, 'qa');
      const expected = new Map<string, number[]>();
      items.forEach((it, i) => {
        for (const c of new Set(it.topics))
          expected.set(c, [...(expected.get(c) ?? []), i % 3 === 0 ? 0 : 1]);
      });
      for (const [category, rewards] of expected) {
        const rows = points.filter((p) => p.category === category && p.run === 'run-1');
        expect(rows.reduce((s, p) => s + p.n, 0)).toBe(rewards.length);
        const mean = rows.reduce((s, p) => s + p.meanReward * p.n, 0) / rewards.length;
        expect(mean).toBeCloseTo(rewards.reduce((s, r) => s + r, 0) / rewards.length, 9);
      }
    });
  });
}
