import { z } from 'zod';
import type { Analytics } from './clickhouse.js';

// The dashboard's ClickHouse queries: plain functions, one per panel, each returning parsed rows.
// They run on chdb and on the Debian 18.16 server alike: no query parameters (the only values
// spliced into the SQL are whole numbers this module computes), every JOIN spelled ALL INNER,
// no qualified column names across a join. Time windows are unix seconds, bucketed by
// intDiv(toUInt32(t), step) so a week at any step stays a few hundred points per series.

/** A time window of whole seconds cut into buckets of `step` seconds. */
export interface TimeWindow {
  readonly from: number;
  readonly to: number;
  readonly step: number;
}

const STEPS = [10, 60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 86_400];

/** The window of the last `spanSeconds` before `now` (ms), with a step that gives at most `points` buckets. */
export function windowOf(spanSeconds: number, now = Date.now(), points = 240): TimeWindow {
  const span = Math.max(60, Math.floor(spanSeconds));
  const step = STEPS.find((s) => span / s <= points) ?? STEPS.at(-1)!;
  const to = Math.floor(now / 1000 / step) * step + step;
  return { from: to - Math.ceil(span / step) * step, to, step };
}

const int = (n: number) => {
  if (!Number.isSafeInteger(n)) throw new Error(`not a whole number: ${n}`);
  return String(n);
};

const Num = z.coerce.number();

async function rows<T extends z.ZodType>(a: Analytics, query: string, row: T): Promise<z.infer<T>[]> {
  const rs = await a.client.query({ query, format: 'JSONEachRow' });
  return z.array(row).parse(await rs.json());
}

export const QaTotals = z.object({ qa: Num, accepted: Num, articles: Num, latestSeconds: Num });
export type QaTotals = z.infer<typeof QaTotals>;

/** QA rows, accepted ones (less those withdrawn since), distinct articles with QA, and the latest classification time (s). */
export async function qaTotals(a: Analytics): Promise<QaTotals> {
  const [row] = await rows(
    a,
    `SELECT count() AS qa,
            countIf(verdict = 'accept' AND id NOT IN (SELECT id FROM qa_withdrawn)) AS accepted,
            uniqExact(article_id) AS articles,
            max(toUInt32(classified_at)) AS latestSeconds
     FROM qa FINAL`,
    QaTotals,
  );
  return row ?? { qa: 0, accepted: 0, articles: 0, latestSeconds: 0 };
}

export const RatePoint = z.object({ t: Num, key: z.string(), qa: Num, articles: Num });
export type RatePoint = z.infer<typeof RatePoint>;

/**
 * QA classified and distinct articles they came from, per bucket and source (or journal; '' is
 * "unknown"). Articles are counted in each bucket where one of their QA was classified.
 */
export async function qaRates(a: Analytics, w: TimeWindow, by: 'source' | 'journal'): Promise<RatePoint[]> {
  const key = by === 'source' ? 'source' : 'journal';
  return rows(
    a,
    `SELECT intDiv(toUInt32(classified_at), ${int(w.step)}) * ${int(w.step)} AS t, ${key} AS key,
            count() AS qa, uniqExact(article_id) AS articles
     FROM qa FINAL
     WHERE toUInt32(classified_at) >= ${int(w.from)} AND toUInt32(classified_at) < ${int(w.to)}
     GROUP BY t, key
     ORDER BY t, key`,
    RatePoint,
  );
}

export const MixPoint = z.object({
  version: Num,
  atSeconds: Num,
  alpha: Num,
  tvdReference: Num,
  tvdTarget: Num,
  jsTarget: Num,
  state: z.string(),
});
export type MixPoint = z.infer<typeof MixPoint>;

/**
 * The last mix version of each bucket of the window (its figures and its MixState JSON), oldest
 * first: a week of versions every 500 ms comes back as a few hundred rows.
 */
export async function mixPoints(a: Analytics, w: TimeWindow): Promise<MixPoint[]> {
  return rows(
    a,
    `SELECT version, toUInt32(at) AS atSeconds, alpha, tvd_reference AS tvdReference,
            tvd_target AS tvdTarget, js_target AS jsTarget, state
     FROM mix_history FINAL
     WHERE version IN (
       SELECT max(version) FROM mix_history
       WHERE toUInt32(at) >= ${int(w.from)} AND toUInt32(at) < ${int(w.to)}
       GROUP BY intDiv(toUInt32(at), ${int(w.step)}))
     ORDER BY version`,
    MixPoint,
  );
}

/** The latest mix version's MixState JSON, or null before the sampler published one. */
export async function latestMixState(a: Analytics): Promise<string | null> {
  const [row] = await rows(
    a,
    `SELECT state FROM mix_history FINAL WHERE version IN (SELECT max(version) FROM mix_history)`,
    z.object({ state: z.string() }),
  );
  return row?.state ?? null;
}

export const LlmUsage = z.object({
  stage: z.string(),
  model: z.string(),
  calls: Num,
  paid: Num,
  journalHits: Num,
  inputTokens: Num,
  outputTokens: Num,
  costUsd: Num,
  costTodayUsd: Num,
  p50Ms: Num,
  p95Ms: Num,
});
export type LlmUsage = z.infer<typeof LlmUsage>;

/**
 * LLM calls, tokens, cost (all time and since `dayStart`, unix seconds) and the latency of paid
 * calls (median and 95th percentile, ms) by stage and model.
 */
export async function llmUsage(a: Analytics, dayStart: number): Promise<LlmUsage[]> {
  const usage = await rows(
    a,
    `SELECT stage, model, count() AS calls, countIf(cached = 0) AS paid, countIf(cached = 1) AS journalHits,
            sum(input_tokens) AS inputTokens, sum(output_tokens) AS outputTokens, sum(cost_usd) AS costUsd,
            sumIf(cost_usd, toUInt32(at) >= ${int(dayStart)}) AS costTodayUsd,
            quantileIf(0.5)(latency_ms, cached = 0) AS p50Ms, quantileIf(0.95)(latency_ms, cached = 0) AS p95Ms
     FROM llm_calls FINAL
     GROUP BY stage, model
     ORDER BY stage, model`,
    z.object({ ...LlmUsage.shape, p50Ms: z.unknown(), p95Ms: z.unknown() }),
  );
  // quantile of no rows is nan, which JSON carries as a string or null depending on the server.
  const ms = (v: unknown) => {
    const n = Number(v);
    return Number.isFinite(n) ? n : 0;
  };
  return usage.map((u) => ({ ...u, p50Ms: ms(u.p50Ms), p95Ms: ms(u.p95Ms) }));
}

export const CostPoint = z.object({ t: Num, stage: z.string(), calls: Num, costUsd: Num, tokens: Num });
export type CostPoint = z.infer<typeof CostPoint>;

/** Calls, tokens and cost per bucket and stage over the window. */
export async function llmSeries(a: Analytics, w: TimeWindow): Promise<CostPoint[]> {
  return rows(
    a,
    `SELECT intDiv(toUInt32(at), ${int(w.step)}) * ${int(w.step)} AS t, stage, count() AS calls,
            sum(cost_usd) AS costUsd, sum(input_tokens + output_tokens) AS tokens
     FROM llm_calls FINAL
     WHERE toUInt32(at) >= ${int(w.from)} AND toUInt32(at) < ${int(w.to)}
     GROUP BY t, stage
     ORDER BY t, stage`,
    CostPoint,
  );
}

export const RewardPoint = z.object({
  t: Num,
  run: z.string(),
  category: z.string(),
  meanReward: Num,
  n: Num,
});
export type RewardPoint = z.infer<typeof RewardPoint>;

/** Mean reward per bucket, run and topic over the window (rewards joined to the QA's categories). */
export async function rewardSeries(a: Analytics, w: TimeWindow): Promise<RewardPoint[]> {
  const inWindow = `toUInt32(recorded_at) >= ${int(w.from)} AND toUInt32(recorded_at) < ${int(w.to)}`;
  return rows(
    a,
    `SELECT t, run, category, avg(reward) AS meanReward, count() AS n
     FROM (
       SELECT qa_id, run, reward, intDiv(toUInt32(recorded_at), ${int(w.step)}) * ${int(w.step)} AS t
       FROM rewards FINAL WHERE ${inWindow}) AS r
     ALL INNER JOIN (
       SELECT id AS qa_id, arrayJoin(arrayDistinct(categories)) AS category
       FROM qa FINAL WHERE id IN (SELECT qa_id FROM rewards WHERE ${inWindow})) AS q
     USING qa_id
     GROUP BY t, run, category
     ORDER BY t, run, category`,
    RewardPoint,
  );
}
