import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Analytics, openClickHouse } from '../../analytics/clickhouse.js';
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
import { insertLlmCalls, spendByStage } from '../../analytics/llm-calls.js';
import { insertMixVersions, mixHistory } from '../../analytics/mix-store.js';
import {
  forEachQaItem,
  insertQa,
  masteryByTopic,
  recordRewards,
  rewardsByTopic,
  snapshotTopicCounts,
  topicCountHistory,
  topicCounts,
  topicCountsBy,
  viewTopicCounts,
} from '../../analytics/qa-store.js';
import { rewardsOverTime } from '../../processors/feeder/rewards-report.js';
import { NASTY, qa } from '../analytics/rows.js';
import { mixFixture } from '../sampler/mix-fixture.js';

/**
 * Strings that break SQL built by concatenation: quote escapes, comments, stacked statements,
 * UNION probes, ClickHouse's own parameter syntax, format-switch attempts, backslash games.
 */
export const INJECTIONS = [
  NASTY,
  "' OR 1=1 --",
  "x'); DROP TABLE qa; --",
  "' UNION ALL SELECT name, 1 FROM system.tables --",
  "\\'; SELECT * FROM system.users FORMAT JSON --",
  '{run:String}',
  "') FORMAT CSV SETTINGS max_threads=1 --",
  '`qa`; TRUNCATE TABLE rewards',
  "/* ' */ OR '1'='1",
  '%_*?[]^$',
];

export interface SqlBackend {
  readonly name: string;
  readonly queryParams: boolean;
  fresh(): Promise<{ url: string; dispose(): Promise<void> }>;
}

const NOW = Math.floor(Date.now() / 1000);

/** Every user-controlled value the analytics store takes goes in as data and comes back verbatim. */
export function sqlInjectionSuite(b: SqlBackend): void {
  describe(`injection strings through every user-controlled value, ${b.name}`, () => {
    let target: { url: string; dispose(): Promise<void> };
    let a: Analytics;
    beforeEach(async () => {
      target = await b.fresh();
      a = await openClickHouse(target.url);
    });
    afterEach(async () => {
      await a?.close();
      await target?.dispose();
    });

    it('QA ids, topic names, sources, journals, run ids, models and mix reasons: stored and read back as data', async () => {
      // Topic names, sources and journals: what articles, the taxonomy file and the classifier bring.
      const rows = INJECTIONS.map((s, i) => ({
        ...qa(`${s}#${i}`, [s, 'Genetics'], { source: s, question: s, answer: s, classifiedAt: NOW * 1000 }),
        articleId: `${s}@article`,
        journal: s,
        model: s,
      }));
      await insertQa(a, rows);
      // Run ids: what a trainer sends in its lease and ack.
      await recordRewards(
        a,
        INJECTIONS.map((s, i) => ({ qaId: `${s}#${i}`, run: s, step: i, reward: 1 })),
      );
      await insertLlmCalls(
        a,
        INJECTIONS.map((s, i) => ({
          callId: `${s}#call${i}`,
          requestKey: s,
          stage: 'mcq' as const,
          provider: 'openai' as const,
          model: s,
          inputTokens: 1,
          outputTokens: 1,
          latencyMs: 1,
          costUsd: 0,
          cached: false,
          attempts: 1,
          repair: false,
          at: NOW * 1000,
        })),
      );
      await insertMixVersions(a, [mixFixture({ version: 1, reason: INJECTIONS.join(' | ') })]);

      const n = INJECTIONS.length;
      const counts = await topicCounts(a);
      expect(counts).toContainEqual({ category: 'Genetics', n });
      for (const s of INJECTIONS) expect(counts).toContainEqual({ category: s, n: 1 });
      expect(await viewTopicCounts(a)).toEqual(counts);
      const bySource = await topicCountsBy(a, 'source');
      for (const s of INJECTIONS) expect(bySource).toContainEqual({ category: s, key: s, n: 1 });
      expect((await topicCountsBy(a, 'day')).length).toBeGreaterThan(0);
      const items: string[] = [];
      await forEachQaItem(a, (item) => items.push(item.source));
      expect(items.sort()).toEqual([...INJECTIONS].sort());

      for (const s of INJECTIONS) {
        // The run filter of `bioalchemy rewards --run`.
        const over = await rewardsOverTime(a, { run: s });
        expect(over.map((r) => r.run)).toEqual([s, s].sort());
        if (b.queryParams) expect(await rewardsByTopic(a, s)).toHaveLength(2);
      }
      expect((await masteryByTopic(a)).find((t) => t.category === 'Genetics')?.n).toBe(n);
      expect((await spendByStage(a))[0]).toMatchObject({ stage: 'mcq', calls: n });
      expect((await mixHistory(a))[0]!.reason).toBe(INJECTIONS.join(' | '));
      await snapshotTopicCounts(a, new Date(NOW * 1000));
      expect((await topicCountHistory(a)).length).toBe(counts.length);

      // The dashboard's panels over the same rows.
      const w = windowOf(3600, NOW * 1000);
      expect(await qaTotals(a)).toMatchObject({ qa: n, accepted: n, articles: n });
      const rates = await qaRates(a, w, 'journal');
      for (const s of INJECTIONS) expect(rates.map((r) => r.key)).toContain(s);
      expect((await qaRates(a, w, 'source')).length).toBe(n);
      expect((await llmUsage(a, NOW - 86_400)).map((u) => u.model).sort()).toEqual([...INJECTIONS].sort());
      expect((await llmSeries(a, w)).length).toBeGreaterThan(0);
      expect(await rewardSeries(a, w)).toBeDefined();
      expect(await mixPoints(a, w)).toBeDefined();
      expect(await latestMixState(a)).toContain('DROP TABLE qa');

      // Nothing was dropped, truncated or rewritten on the way.
      const [totals] = (await (
        await a.client.query({
          query:
            'SELECT (SELECT count() FROM qa FINAL) AS qa, (SELECT count() FROM rewards FINAL) AS rewards',
          format: 'JSONEachRow',
        })
      ).json()) as { qa: string | number; rewards: string | number }[];
      expect(Number(totals!.qa)).toBe(n);
      expect(Number(totals!.rewards)).toBe(n);
    });
  });
}

// ---- the source side: every SQL text in the code splices only audited expressions ----

const SQL = /\b(SELECT|INSERT|ALTER|CREATE|DROP|WHERE|FROM)\b/;

/** The template-literal interpolations allowed inside SQL text, each audited as never user input. */
export const AUDITED: Readonly<Record<string, string>> = {
  'int(w.step)': 'a whole number windowOf computed (int() throws on anything else)',
  'int(w.from)': 'as above',
  'int(w.to)': 'as above',
  'int(dayStart)': 'a whole number, int() throws on anything else',
  inWindow: 'a WHERE clause of int() values only',
  key: "one of two column expressions picked by a typed 'source' | 'day' / 'source' | 'journal' switch",
  limit: 'ORDER BY ... LIMIT of Math.max(0, Math.floor(last))',
  bucket: 'one of three function names from a constant map keyed by a typed bucket',
  STILL_ACCEPTED: "a constant condition (qa-store.ts): verdict = 'accept' and not in qa_withdrawn",
  'key.view':
    "a column expression from the constant GROUP_KEYS map, keyed by a typed 'source' | 'day' | 'none'",
  'key.qa': 'as above',
};

/** Every `${…}` inside a template literal that reads as SQL, in every .ts under the given folders. */
export function sqlInterpolations(roots: readonly string[]): { file: string; expr: string }[] {
  const out: { file: string; expr: string }[] = [];
  const visit = (path: string) => {
    if (statSync(path).isDirectory()) {
      for (const e of readdirSync(path)) visit(join(path, e));
      return;
    }
    if (!path.endsWith('.ts')) return;
    const text = readFileSync(path, 'utf8');
    for (const m of text.matchAll(/`((?:[^`\\]|\\.)*)`/g)) {
      const body = m[1]!;
      if (!SQL.test(body) || !/\b(SELECT|INSERT|ALTER|CREATE|DROP)\b/.test(body)) continue;
      for (const e of body.matchAll(/\$\{([^}]*)\}/g)) out.push({ file: path, expr: e[1]!.trim() });
    }
  };
  for (const r of roots) visit(r);
  return out;
}
