import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openClickHouse } from '../analytics/clickhouse.js';
import { qaTotals, windowOf } from '../analytics/dashboard-queries.js';
import { loadReference } from '../schemas/reference.js';
import { loadTaxonomy } from '../schemas/taxonomy.js';
import { DashboardData } from '../server/dashboard-data.js';
import { insertCalls, insertMixHistory, insertQaRows, insertRewards } from '../test/dashboard/data.js';

// `npm run bench -- dashboard`: each panel's queries on chdb over 1M QA items classified over a
// week, a week of mix versions (one a minute), 300K LLM calls and 100K rewards. Each panel is
// timed as the server gathers it (the median of 5), for the default 1-hour window and for a week,
// next to a baseline measured in the same run: one plain scan of the qa table
// (SELECT count(), uniqExact(article_id) FROM qa, no FINAL), the least a panel over every QA row costs.

const WEEK = 7 * 86_400;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function run(): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bioalchemy-bench-dashboard-'));
  const a = await openClickHouse(`chdb:${dir}`);
  const lines: string[] = [];
  try {
    const now = Date.now();
    const to = Math.floor(now / 1000);
    let started = performance.now();
    await insertQaRows(a, 1_000_000, { from: to - WEEK, to });
    const versions = await insertMixHistory(a, { from: to - WEEK, to, everySeconds: 60 });
    await insertCalls(a, 300_000, { from: to - WEEK, to });
    await insertRewards(a, 100_000, { at: to - 1800 });
    lines.push(
      `data: 1,000,000 QA, ${versions.toLocaleString('en-US')} mix versions, 300,000 LLM calls, 100,000 rewards over a week, written in ${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
    const data = new DashboardData({
      analytics: a,
      reference: loadReference(),
      taxonomy: loadTaxonomy(),
      alpha: 0.5,
    });
    const baseline: number[] = [];
    const time = async (fn: () => Promise<unknown>) => {
      started = performance.now();
      await fn();
      return performance.now() - started;
    };
    const panels: Record<string, (w: number) => Promise<unknown>> = {
      'totals (qa FINAL)': () => qaTotals(a),
      topics: () => data.topics(),
      drift: (w) => data.drift(windowOf(w, now)),
      'rates (source, journal)': (w) => data.rates(windowOf(w, now)),
      llm: (w) => data.llm(windowOf(w, now), now),
      'feeder rewards': (w) => data.feeder(windowOf(w, now)),
    };
    // Warm-up: the first query of a table pays for loading its parts.
    for (const fn of Object.values(panels)) await fn(3600);
    for (const [window, label] of [
      [3600, '1 hour'],
      [WEEK, '1 week'],
    ] as const) {
      for (const [name, fn] of Object.entries(panels)) {
        if (name.startsWith('totals') || name === 'topics') {
          if (window !== 3600) continue;
        }
        const figure: number[] = [];
        for (let i = 0; i < 5; i++) {
          figure.push(await time(() => fn(window)));
          baseline.push(
            await time(() =>
              a.client
                .query({ query: 'SELECT count(), uniqExact(article_id) FROM qa', format: 'JSONEachRow' })
                .then((r) => r.json()),
            ),
          );
        }
        const b = median(baseline);
        const f = median(figure);
        const scope = name.startsWith('totals') || name === 'topics' ? 'all time' : label;
        lines.push(
          `${name}, ${scope}: ${f.toFixed(0)} ms vs a plain qa scan: ${b.toFixed(0)} ms = ${(f / b).toFixed(2)}x`,
        );
      }
    }
    const whole: number[] = [];
    for (let i = 0; i < 3; i++) whole.push(await time(() => data.snapshot({ windowSeconds: WEEK, now })));
    lines.push(
      `whole snapshot (every panel, 1 week): ${median(whole).toFixed(0)} ms; the server gathers it once per refresh for every open page`,
    );
  } finally {
    await a.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return lines;
}
