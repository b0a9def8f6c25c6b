import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Analytics, openClickHouse, UnsupportedByServerError } from '../../analytics/clickhouse.js';
import { qaTotals } from '../../analytics/dashboard-queries.js';
import { insertLlmCalls, spendByStage } from '../../analytics/llm-calls.js';
import { readMigrations } from '../../analytics/migrations.js';
import { insertMixVersions, mixHistory } from '../../analytics/mix-store.js';
import {
  forEachQaItem,
  insertQa,
  insertWithdrawn,
  recordRewards,
  rewardsByTopic,
  snapshotTopicCounts,
  topicCountHistory,
  topicCounts,
  topicCountsBy,
  viewTopicCounts,
} from '../../analytics/qa-store.js';
import { mixFixture } from '../sampler/mix-fixture.js';
import { NASTY, qa } from './rows.js';

/**
 * A test that applies to one kind of backend only is not registered on the other (rather than
 * shown as skipped): each backend runs exactly the tests that can pass or fail on it.
 */
export const onlyWhen = (applies: boolean) =>
  applies ? it : (_name: string, _fn: () => Promise<void>) => undefined;

/** A place no other test uses: its URL, and how to remove it afterwards. */
export interface FreshTarget {
  readonly url: string;
  dispose(): Promise<void>;
}

export interface Backend {
  readonly name: string;
  readonly backend: 'chdb' | 'http';
  /** Known before the tests are collected, so each test either runs or is visibly skipped. */
  readonly queryParams: boolean;
  fresh(): Promise<FreshTarget>;
}

const CountRow = z.object({ n: z.coerce.number() });

async function count(a: Analytics, query: string): Promise<number> {
  const rs = await a.client.query({ query, format: 'JSONEachRow' });
  const [row] = z.array(CountRow).parse(await rs.json());
  return row?.n ?? Number.NaN;
}

/** The analytics store suite, written once, run on every backend. */
export function storeSuite(b: Backend): void {
  describe(`analytics store on ${b.name}`, () => {
    let target: FreshTarget;
    let a: Analytics;

    beforeEach(async () => {
      target = await b.fresh();
      a = await openClickHouse(target.url);
    });
    afterEach(async () => {
      await a?.close();
      await target?.dispose();
    });

    it('opens the right backend and applies every migration once', async () => {
      expect(a.backend).toBe(b.backend);
      expect(a.serverVersion).toMatch(/^\d+\.\d+/);
      expect(a.features.queryParams).toBe(b.queryParams);
      const files = (await readMigrations()).map((m) => m.version);
      expect(a.migrationsApplied).toEqual(files);
      await a.close();
      a = await openClickHouse(target.url);
      expect(a.migrationsApplied).toEqual([]);
      expect(await count(a, 'SELECT count() AS n FROM schema_migrations')).toBe(files.length);
    });

    it('counts accepted QA per category (multi-label), ignoring rejected ones', async () => {
      await insertQa(a, [
        qa('q1', ['genetics', 'microbiology']),
        qa('q2', ['genetics']),
        qa('q3', ['ecology'], { verdict: 'reject' }),
        qa('q4', ['ecology', 'ecology']),
      ]);
      expect(await topicCounts(a)).toEqual([
        { category: 'ecology', n: 1 },
        { category: 'genetics', n: 2 },
        { category: 'microbiology', n: 1 },
      ]);
    });

    it('a replay of the same QA ids does not double count', async () => {
      const rows = [qa('q1', ['genetics', 'microbiology']), qa('q2', ['genetics'])];
      await insertQa(a, rows);
      const before = await topicCounts(a);
      await insertQa(a, rows);
      await insertQa(a, rows.slice(1));
      expect(await topicCounts(a)).toEqual(before);
      expect(await count(a, 'SELECT count() AS n FROM qa FINAL')).toBe(2);
      // The duplicates are really there, unmerged: FINAL is what hides them.
      expect(await count(a, 'SELECT count() AS n FROM qa')).toBe(5);
    });

    it('the topic_counts view counts each QA id once per category, source and day, replays included', async () => {
      const day1 = Date.parse('2026-03-01T10:00:00Z');
      const day2 = Date.parse('2026-03-02T23:59:59Z');
      const rows = [
        qa('q1', ['genetics', 'microbiology'], { source: 'jats', classifiedAt: day1 }),
        qa('q2', ['genetics', 'genetics'], { source: 'medline', classifiedAt: day1 }),
        qa('q3', ['genetics'], { source: 'jats', classifiedAt: day2 }),
        qa('q4', ['ecology'], { verdict: 'reject', classifiedAt: day2 }),
      ];
      await insertQa(a, rows);
      await insertQa(a, rows); // a replayed batch
      await insertQa(a, rows.slice(2)); // and a restarted sink's partial one
      const expected = [
        { category: 'genetics', n: 3 },
        { category: 'microbiology', n: 1 },
      ];
      expect(await viewTopicCounts(a)).toEqual(expected);
      expect(await topicCounts(a)).toEqual(expected);
      expect(await topicCountsBy(a, 'source')).toEqual([
        { category: 'genetics', key: 'jats', n: 2 },
        { category: 'genetics', key: 'medline', n: 1 },
        { category: 'microbiology', key: 'jats', n: 1 },
      ]);
      expect(await topicCountsBy(a, 'day')).toEqual([
        { category: 'genetics', key: '2026-03-01', n: 2 },
        { category: 'genetics', key: '2026-03-02', n: 1 },
        { category: 'microbiology', key: '2026-03-01', n: 1 },
      ]);
    });

    it('leaves QA withdrawn by the dedup out of every count of accepted QA, whichever was written first', async () => {
      const day1 = Date.parse('2026-03-01T10:00:00Z');
      const day2 = Date.parse('2026-03-02T12:00:00Z');
      // q2 withdrawn after it was written, q4 before (the sink reads two topics, in any order).
      await insertQa(a, [
        qa('q1', ['genetics', 'microbiology'], { source: 'jats', classifiedAt: day1 }),
        qa('q2', ['genetics', 'microbiology'], { source: 'medline', classifiedAt: day1 }),
        qa('q3', ['genetics'], { source: 'jats', classifiedAt: day2 }),
      ]);
      await insertWithdrawn(a, [
        { qaId: 'q2', duplicateOf: 'q1' },
        { qaId: 'q4', duplicateOf: 'q3' },
      ]);
      await insertWithdrawn(a, [{ qaId: 'q2', duplicateOf: 'q1' }]); // a replayed step
      await insertQa(a, [qa('q4', ['ecology'], { source: 'jats', classifiedAt: day2 })]);
      const expected = [
        { category: 'genetics', n: 2 },
        { category: 'microbiology', n: 1 },
      ];
      expect(await topicCounts(a)).toEqual(expected);
      expect(await viewTopicCounts(a)).toEqual(expected);
      expect(await topicCountsBy(a, 'source')).toEqual([
        { category: 'genetics', key: 'jats', n: 2 },
        { category: 'microbiology', key: 'jats', n: 1 },
      ]);
      expect(await topicCountsBy(a, 'day')).toEqual([
        { category: 'genetics', key: '2026-03-01', n: 1 },
        { category: 'genetics', key: '2026-03-02', n: 1 },
        { category: 'microbiology', key: '2026-03-01', n: 1 },
      ]);
      const items: string[] = [];
      await forEachQaItem(a, (it) => items.push(it.id));
      expect(items.sort()).toEqual(['q1', 'q3']);
      expect(await qaTotals(a)).toMatchObject({ qa: 4, accepted: 2 });
    });

    it('streams every accepted QA item with its topics, source and publication date', async () => {
      await insertQa(a, [
        qa('q1', ['genetics', 'microbiology'], { source: 'jats', published: '2023-04' }),
        qa('q2', ['ecology'], { verdict: 'reject' }),
        qa('q3', ['ecology'], { source: 'medline' }),
      ]);
      await insertQa(a, [qa('q1', ['genetics', 'microbiology'], { source: 'jats', published: '2023-04' })]);
      const items: unknown[] = [];
      expect(await forEachQaItem(a, (it) => items.push(it))).toBe(2);
      expect(items.sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y)))).toEqual([
        {
          id: 'q1',
          articleId: 'doi:10.1000/xyz',
          topics: ['genetics', 'microbiology'],
          source: 'jats',
          published: '2023-04',
        },
        { id: 'q3', articleId: 'doi:10.1000/xyz', topics: ['ecology'], source: 'medline', published: null },
      ]);
    });

    it('keeps every mix version once, oldest first', async () => {
      const v1 = mixFixture({ version: 1, reason: 'new data' });
      const v2 = mixFixture({ version: 2, reason: 'timer' });
      await insertMixVersions(a, [v1, v2]);
      await insertMixVersions(a, [v2]); // a replayed step
      expect(await mixHistory(a)).toEqual([v1, v2]);
      expect(await mixHistory(a, 1)).toEqual([v2]);
    });

    it('stamps rows with the time they were written (18.16 leaves omitted defaults at 0)', async () => {
      const before = Math.floor(Date.now() / 1000) - 1;
      await insertQa(a, [qa('q1', ['genetics'])]);
      await recordRewards(a, [{ qaId: 'q1', run: 'r1', step: 1, reward: 1 }]);
      expect(await count(a, 'SELECT toUnixTimestamp(min(inserted_at)) AS n FROM qa')).toBeGreaterThanOrEqual(
        before,
      );
      expect(
        await count(a, 'SELECT toUnixTimestamp(min(recorded_at)) AS n FROM rewards'),
      ).toBeGreaterThanOrEqual(before);
    });

    it('a re-written QA (same id) replaces the earlier row', async () => {
      await insertQa(a, [qa('q1', ['genetics'])]);
      // inserted_at has second resolution; equal versions keep the last inserted row.
      await insertQa(a, [qa('q1', ['ecology'], { verdict: 'reject' })]);
      expect(await topicCounts(a)).toEqual([]);
    });

    it('stores quotes, backslashes and SQL in strings verbatim (no injection)', async () => {
      await insertQa(a, [qa('evil', [NASTY], { question: NASTY, answer: NASTY })]);
      const rs = await a.client.query({
        query: 'SELECT question, answer FROM qa FINAL',
        format: 'JSONEachRow',
      });
      expect(await rs.json()).toEqual([{ question: NASTY, answer: NASTY }]);
      expect(await topicCounts(a)).toEqual([{ category: NASTY, n: 1 }]);
    });

    it('rejects an invalid row before writing anything', async () => {
      const bad = { ...qa('q1', ['genetics']), quality: 2 };
      await expect(insertQa(a, [qa('q0', ['genetics']), bad])).rejects.toThrow(/quality/);
      expect(await count(a, 'SELECT count() AS n FROM qa')).toBe(0);
    });

    it('empty batches are no-ops', async () => {
      await insertQa(a, []);
      await recordRewards(a, []);
      expect(await snapshotTopicCounts(a, new Date())).toEqual([]);
      expect(await topicCounts(a)).toEqual([]);
      expect(await topicCountHistory(a)).toEqual([]);
    });

    it('records LLM calls idempotently by call id, and sums spend per stage', async () => {
      const call = (callId: string, stage: 'mcq' | 'classify', cached: boolean) => ({
        callId,
        requestKey: `key-${callId}`,
        stage,
        provider: 'openai' as const,
        model: 'm',
        inputTokens: cached ? 0 : 100,
        outputTokens: cached ? 0 : 10,
        latencyMs: 12.5,
        costUsd: cached ? 0 : 0.25,
        cached,
        attempts: cached ? 0 : 1,
        repair: false,
        at: 1_764_000_000_000,
      });
      const calls = [
        call('c1', 'mcq', false),
        call('c2', 'mcq', true),
        // A reasoning model's call: of its output, the thinking.
        { ...call('c3', 'classify', false), reasoningTokens: 7 },
      ];
      await insertLlmCalls(a, calls);
      // A flush retried after a failure sends the same records again.
      await insertLlmCalls(a, calls);
      expect(await count(a, 'SELECT count() AS n FROM llm_calls FINAL')).toBe(3);
      expect(await count(a, 'SELECT sum(reasoning_tokens) AS n FROM llm_calls FINAL')).toBe(7);
      expect(await spendByStage(a)).toEqual([
        {
          stage: 'classify',
          calls: 1,
          paid: 1,
          journalHits: 0,
          inputTokens: 100,
          outputTokens: 10,
          costUsd: 0.25,
        },
        {
          stage: 'mcq',
          calls: 2,
          paid: 1,
          journalHits: 1,
          inputTokens: 100,
          outputTokens: 10,
          costUsd: 0.25,
        },
      ]);
    });

    it('recordRewards is idempotent by (run, QA id, step)', async () => {
      const acks = [
        { qaId: 'q1', run: 'r1', step: 1, reward: 1 },
        { qaId: 'q2', run: 'r1', step: 1, reward: 0 },
        { qaId: 'q1', run: 'r1', step: 2, reward: 1 },
        { qaId: 'q1', run: 'r2', step: 1, reward: 0.5 },
      ];
      await recordRewards(a, acks);
      await recordRewards(a, acks);
      expect(await count(a, 'SELECT count() AS n FROM rewards FINAL')).toBe(4);
    });

    it("recordRewards keeps what an ack said of the rollouts (issue 44's dashboard figures)", async () => {
      const acks = [
        { qaId: 'q1', run: 'difficulty', step: 1, reward: 0.6, rollouts: 5, passes: 3, flatGroups: 0 },
        { qaId: 'q2', run: 'difficulty', step: 1, reward: 1, rollouts: 10, passes: 10, flatGroups: 2 },
        { qaId: 'q3', run: 'difficulty', step: 1, reward: 0.5 },
      ];
      await recordRewards(a, acks);
      await recordRewards(a, acks);
      const where = "FROM rewards FINAL WHERE run = 'difficulty'";
      expect(await count(a, `SELECT sum(rollouts) AS n ${where}`)).toBe(15);
      expect(await count(a, `SELECT toUInt64(sum(passes)) AS n ${where}`)).toBe(13);
      expect(await count(a, `SELECT sum(flat_groups) AS n ${where}`)).toBe(2);
    });

    onlyWhen(b.queryParams)(
      'rewardsByTopic: mean reward and count per category, replays not counted',
      async () => {
        await insertQa(a, [
          qa('q1', ['genetics', 'microbiology']),
          qa('q2', ['genetics']),
          qa('q3', ['ecology']),
        ]);
        const acks = [
          { qaId: 'q1', run: 'r1', step: 1, reward: 1 },
          { qaId: 'q2', run: 'r1', step: 1, reward: 0 },
          { qaId: 'q1', run: 'r1', step: 2, reward: 0.5 },
          { qaId: 'q3', run: 'r2', step: 1, reward: 1 },
        ];
        await recordRewards(a, acks);
        await recordRewards(a, acks.slice(0, 2)); // a redelivered ack
        expect(await rewardsByTopic(a, 'r1')).toEqual([
          { category: 'genetics', meanReward: 0.5, n: 3 },
          { category: 'microbiology', meanReward: 0.75, n: 2 },
        ]);
        expect(await rewardsByTopic(a, 'r2')).toEqual([{ category: 'ecology', meanReward: 1, n: 1 }]);
        expect(await rewardsByTopic(a, 'no such run')).toEqual([]);
      },
    );

    onlyWhen(b.queryParams)('rewardsByTopic binds the run name as a parameter (no injection)', async () => {
      await insertQa(a, [qa('q1', ['genetics'])]);
      await recordRewards(a, [
        { qaId: 'q1', run: NASTY, step: 1, reward: 0.25 },
        { qaId: 'q1', run: 'r1', step: 1, reward: 1 },
      ]);
      expect(await rewardsByTopic(a, NASTY)).toEqual([{ category: 'genetics', meanReward: 0.25, n: 1 }]);
      expect(await rewardsByTopic(a, "r1' OR 1=1 --")).toEqual([]);
      expect(await count(a, 'SELECT count() AS n FROM qa FINAL')).toBe(1);
    });

    onlyWhen(!b.queryParams)(
      'rewardsByTopic fails clearly on a server without query parameters',
      async () => {
        const err = await rewardsByTopic(a, 'r1').catch((e: unknown) => e);
        expect(err).toBeInstanceOf(UnsupportedByServerError);
        expect((err as Error).message).toMatch(/query parameters.*ClickHouse \d+\.\d+.*19\.x/);
      },
    );

    it('snapshots topic counts into a history; the same snapshot twice is one snapshot', async () => {
      const t1 = new Date('2025-01-01T00:00:00Z');
      const t2 = new Date('2025-01-02T00:00:00.750Z');
      await insertQa(a, [qa('q1', ['genetics'])]);
      expect(await snapshotTopicCounts(a, t1)).toEqual([{ category: 'genetics', n: 1 }]);
      await insertQa(a, [qa('q2', ['genetics', 'ecology'])]);
      await snapshotTopicCounts(a, t2);
      await snapshotTopicCounts(a, t2);
      const t2s = new Date('2025-01-02T00:00:00Z');
      expect(await topicCountHistory(a)).toEqual([
        { at: t1, category: 'genetics', n: 1 },
        { at: t2s, category: 'ecology', n: 1 },
        { at: t2s, category: 'genetics', n: 2 },
      ]);
    });
  });
}
