import { z } from 'zod';
import type { ClassifiedQa } from '../schemas/qa.js';
import { Score } from '../schemas/qa.js';
import { type Analytics, requireQueryParams } from './clickhouse.js';

// Every write is JSONEachRow (values travel as JSON, which every ClickHouse since long before
// 18.16 parses) and every read of a ReplacingMergeTree uses FINAL, so a replayed step never shows
// as a second row, merged or not. The one value a read needs (a run name) is a {name:Type} query
// parameter; that function refuses servers without them rather than splicing the value in.

/** One row of the `qa` table: a classified QA pair, flattened. */
export const QaRow = z.object({
  id: z.string().min(1),
  articleId: z.string().min(1),
  kind: z.enum(['multiple-choice', 'free-form']),
  question: z.string(),
  answer: z.string(),
  /** Category ids of the classification's labels. */
  categories: z.array(z.string().min(1)),
  verdict: z.enum(['accept', 'reject']),
  quality: Score,
  difficulty: Score,
  answerability: Score,
  verifiability: Score,
  /** The generating model and prompt version, as stamped on the candidate. */
  model: z.string(),
  promptVersion: z.string(),
  mixVersion: z.number().int().nonnegative().default(0),
  source: z.string().default(''),
  journal: z.string().nullable().default(null),
  published: z.string().nullable().default(null),
  /** When the QA was classified: its log record's timestamp (ms), so a replay writes the same. */
  classifiedAt: z.number().int().nonnegative().default(0),
});
export type QaRow = z.input<typeof QaRow>;

/** The row the count sink writes for a classified QA, classified at `classifiedAt` (ms). */
export function qaRow(qa: ClassifiedQa, classifiedAt = 0): QaRow {
  const { candidate, grade, classification } = qa;
  return {
    id: candidate.id,
    articleId: candidate.articleId,
    kind: candidate.kind,
    question: candidate.question,
    answer: candidate.answer,
    categories: [...new Set(classification.labels.map((l) => l.category))],
    verdict: grade.verdict,
    ...grade.scores,
    model: candidate.generatedBy.model,
    promptVersion: candidate.generatedBy.promptVersion,
    source: candidate.provenance.source,
    journal: candidate.provenance.journal,
    published: candidate.provenance.published,
    classifiedAt,
  };
}

/** Idempotent by QA id: a replayed row replaces the earlier one (the later insert wins). */
export async function insertQa(a: Analytics, rows: readonly QaRow[]): Promise<void> {
  if (rows.length === 0) return;
  const now = Math.floor(Date.now() / 1000);
  const values = rows.map((input) => {
    const r = QaRow.parse(input);
    return {
      id: r.id,
      article_id: r.articleId,
      kind: r.kind,
      question: r.question,
      answer: r.answer,
      categories: r.categories,
      verdict: r.verdict,
      quality: r.quality,
      difficulty: r.difficulty,
      answerability: r.answerability,
      verifiability: r.verifiability,
      model: r.model,
      prompt_version: r.promptVersion,
      mix_version: r.mixVersion,
      source: r.source,
      journal: r.journal ?? '',
      published: r.published ?? '',
      // Seconds since the epoch: a formatted string would be read in the server's time zone.
      classified_at: Math.floor(r.classifiedAt / 1000),
      // Explicit: 18.16 fills an omitted JSONEachRow column with 0, not its DEFAULT now().
      inserted_at: now,
    };
  });
  await a.client.insert({ table: 'qa', values, format: 'JSONEachRow' });
}

/** Accepted QA withdrawn since (qa.withdrawn): idempotent by id, a replayed row changes nothing. */
export async function insertWithdrawn(
  a: Analytics,
  rows: readonly { readonly qaId: string; readonly duplicateOf: string }[],
): Promise<void> {
  if (rows.length === 0) return;
  const now = Math.floor(Date.now() / 1000);
  await a.client.insert({
    table: 'qa_withdrawn',
    values: rows.map((r) => ({ id: r.qaId, duplicate_of: r.duplicateOf, inserted_at: now })),
    format: 'JSONEachRow',
  });
}

/** The SQL condition "this accepted QA still counts": accepted, and not withdrawn since. */
const STILL_ACCEPTED = `verdict = 'accept' AND id NOT IN (SELECT id FROM qa_withdrawn)`;

// UInt64 arrives as a JSON string over HTTP (output_format_json_quote_64bit_integers) and as a
// number from chdb: coerce, so callers see one shape.
const Count = z.coerce.number().int().nonnegative();

export const TopicCount = z.object({ category: z.string(), n: Count });
export type TopicCount = z.infer<typeof TopicCount>;

/** Accepted QA per category, each QA counted once per category however often it was written. */
export async function topicCounts(a: Analytics): Promise<TopicCount[]> {
  // uniqExact(id) on top of FINAL: a label listed twice in one row still counts once.
  const rs = await a.client.query({
    query: `SELECT category, uniqExact(id) AS n
            FROM qa FINAL
            ARRAY JOIN categories AS category
            WHERE ${STILL_ACCEPTED}
            GROUP BY category
            ORDER BY category`,
    format: 'JSONEachRow',
  });
  return z.array(TopicCount).parse(await rs.json());
}

export const TopicCountBy = z.object({ category: z.string(), key: z.string(), n: Count });
export type TopicCountBy = z.infer<typeof TopicCountBy>;

/** How the view's groups are keyed, as SQL on `qa` and on `topic_counts`. */
const GROUP_KEYS = {
  source: { qa: 'source', view: 'source' },
  day: { qa: 'toString(toDate(classified_at))', view: 'toString(day)' },
  none: { qa: "''", view: "''" },
} as const;

/**
 * Accepted QA per category and source, or per category and day (YYYY-MM-DD of classification),
 * from the topic_counts materialized view: exact distinct ids, cheap at any size.
 */
export async function topicCountsBy(a: Analytics, by: 'source' | 'day'): Promise<TopicCountBy[]> {
  return viewCounts(a, by);
}

/** Accepted QA per category from the materialized view (what the count sink's counts are). */
export async function viewTopicCounts(a: Analytics): Promise<TopicCount[]> {
  return (await viewCounts(a, 'none')).map(({ category, n }) => ({ category, n }));
}

/**
 * The view's sets hold every id ever accepted, so the ids withdrawn since are counted apart, in
 * the same groups, and taken off: a read of the few withdrawn rows of qa by its primary key.
 */
async function viewCounts(a: Analytics, by: keyof typeof GROUP_KEYS): Promise<TopicCountBy[]> {
  const key = GROUP_KEYS[by];
  const [all, withdrawn] = await Promise.all([
    a.client.query({
      query: `SELECT category, ${key.view} AS key, uniqExactMerge(items) AS n
              FROM topic_counts
              GROUP BY category, key
              ORDER BY category, key`,
      format: 'JSONEachRow',
    }),
    a.client.query({
      query: `SELECT category, ${key.qa} AS key, uniqExact(id) AS n
              FROM qa FINAL
              ARRAY JOIN arrayDistinct(categories) AS category
              WHERE verdict = 'accept' AND id IN (SELECT id FROM qa_withdrawn)
              GROUP BY category, key`,
      format: 'JSONEachRow',
    }),
  ]);
  const off = new Map(
    z
      .array(TopicCountBy)
      .parse(await withdrawn.json())
      .map((r) => [`${r.category}\u0000${r.key}`, r.n]),
  );
  return z
    .array(TopicCountBy)
    .parse(await all.json())
    .map((r) => ({ ...r, n: r.n - (off.get(`${r.category}\u0000${r.key}`) ?? 0) }))
    .filter((r) => r.n > 0);
}

const ItemRow = z.object({
  id: z.string(),
  article_id: z.string(),
  categories: z.array(z.string()),
  source: z.string(),
  published: z.string(),
});

/**
 * Every accepted QA item as the sampler sees it (id, article, topics, source, publication date), streamed
 * so millions of rows never sit in memory as JSON at once.
 */
export async function forEachQaItem(
  a: Analytics,
  visit: (item: {
    id: string;
    articleId: string;
    topics: string[];
    source: string;
    published: string | null;
  }) => void,
): Promise<number> {
  const rs = await a.client.query({
    query: `SELECT id, article_id, categories, source, published FROM qa FINAL WHERE ${STILL_ACCEPTED}`,
    format: 'JSONEachRow',
  });
  let n = 0;
  for await (const rows of rs.stream()) {
    for (const row of rows) {
      const r = ItemRow.parse(row.json());
      visit({
        id: r.id,
        articleId: r.article_id,
        topics: r.categories,
        source: r.source,
        published: r.published || null,
      });
      n++;
    }
  }
  return n;
}

/** A per-item reward from a trainer ack. */
export const RewardRow = z.object({
  qaId: z.string().min(1),
  run: z.string().min(1),
  step: z.number().int().nonnegative().max(0xffff_ffff),
  reward: z.number().finite(),
  mixVersion: z.number().int().nonnegative().default(0),
  // What the ack said of the rollouts (0 when it sent a mean only): the dashboard's pass rates
  // and flat groups.
  rollouts: z.number().int().nonnegative().max(0xffff_ffff).default(0),
  passes: z.number().finite().nonnegative().default(0),
  flatGroups: z.number().int().nonnegative().max(0xffff_ffff).default(0),
});
export type RewardRow = z.input<typeof RewardRow>;

/** Idempotent by (run, QA id, step): a redelivered ack replaces the earlier reward. */
export async function recordRewards(a: Analytics, rows: readonly RewardRow[]): Promise<void> {
  if (rows.length === 0) return;
  const now = Math.floor(Date.now() / 1000);
  const values = rows.map((input) => {
    const r = RewardRow.parse(input);
    // recorded_at explicit: 18.16 fills an omitted JSONEachRow column with 0, not its DEFAULT now().
    return {
      qa_id: r.qaId,
      run: r.run,
      step: r.step,
      reward: r.reward,
      mix_version: r.mixVersion,
      rollouts: r.rollouts,
      passes: r.passes,
      flat_groups: r.flatGroups,
      recorded_at: now,
    };
  });
  await a.client.insert({ table: 'rewards', values, format: 'JSONEachRow' });
}

export const TopicReward = z.object({ category: z.string(), meanReward: z.number(), n: Count });
export type TopicReward = z.infer<typeof TopicReward>;

/**
 * Mean reward and number of rewarded items per category for one run (what the model learns, by
 * topic). Needs query parameters: chdb or a server of the 19.x series or later.
 */
export async function rewardsByTopic(a: Analytics, run: string): Promise<TopicReward[]> {
  requireQueryParams(a, 'rewardsByTopic');
  const rs = await a.client.query({
    query: `SELECT category, avg(r.reward) AS meanReward, count() AS n
            FROM (SELECT qa_id, reward FROM rewards FINAL WHERE run = {run:String}) AS r
            INNER JOIN (SELECT id AS qa_id, arrayJoin(arrayDistinct(categories)) AS category FROM qa FINAL) AS q
            USING qa_id
            GROUP BY category
            ORDER BY category`,
    query_params: { run },
    format: 'JSONEachRow',
  });
  return z.array(TopicReward).parse(await rs.json());
}

/**
 * Mean reward and rewards per category over every run: how well the model does on each topic.
 * Takes no input, so it needs no query parameters and runs on 18.16 too.
 */
export async function masteryByTopic(a: Analytics): Promise<TopicReward[]> {
  const rs = await a.client.query({
    query: `SELECT category, avg(r.reward) AS meanReward, count() AS n
            FROM (SELECT qa_id, reward FROM rewards FINAL) AS r
            INNER JOIN (SELECT id AS qa_id, arrayJoin(arrayDistinct(categories)) AS category FROM qa FINAL) AS q
            USING qa_id
            GROUP BY category
            ORDER BY category`,
    format: 'JSONEachRow',
  });
  return z.array(TopicReward).parse(await rs.json());
}

const HistoryRow = z.object({ atSeconds: z.coerce.number(), category: z.string(), n: Count });

export const TopicCountAt = z.object({ at: z.date(), category: z.string(), n: z.number() });
export type TopicCountAt = z.infer<typeof TopicCountAt>;

/**
 * Records the current topicCounts() as of `at` (second precision) and returns them. Taking the
 * same snapshot twice replaces it. A snapshot of an empty table records nothing.
 */
export async function snapshotTopicCounts(a: Analytics, at: Date = new Date()): Promise<TopicCount[]> {
  const counts = await topicCounts(a);
  if (counts.length === 0) return counts;
  // A unix timestamp, not a formatted string: a string would be read in the server's time zone.
  const seconds = Math.floor(at.getTime() / 1000);
  await a.client.insert({
    table: 'topic_count_history',
    values: counts.map((c) => ({ at: seconds, category: c.category, n: c.n })),
    format: 'JSONEachRow',
  });
  return counts;
}

/** Every snapshot, oldest first, categories in name order within one. */
export async function topicCountHistory(a: Analytics): Promise<TopicCountAt[]> {
  const rs = await a.client.query({
    query: `SELECT toUnixTimestamp(at) AS atSeconds, category, n
            FROM topic_count_history FINAL
            ORDER BY atSeconds, category`,
    format: 'JSONEachRow',
  });
  return z
    .array(HistoryRow)
    .parse(await rs.json())
    .map((r) => ({ at: new Date(r.atSeconds * 1000), category: r.category, n: r.n }));
}
