import { z } from 'zod';
import type { Analytics } from '../../analytics/clickhouse.js';

export const RewardBucket = z.object({
  atSeconds: z.coerce.number(),
  run: z.string(),
  category: z.string(),
  meanReward: z.coerce.number(),
  n: z.coerce.number().int(),
});
export type RewardBucket = z.infer<typeof RewardBucket>;

const BUCKETS = { minute: 'toStartOfMinute', hour: 'toStartOfHour', day: 'toStartOfDay' } as const;
export type BucketSize = keyof typeof BUCKETS;

/**
 * Mean acked reward per run, topic and time bucket (when the rewards were recorded): what the
 * model learns, by topic, over time. No query parameters (a run is filtered here), so it runs on
 * chdb and on 18.16 alike.
 */
export async function rewardsOverTime(
  a: Analytics,
  opts: { every?: BucketSize; run?: string } = {},
): Promise<RewardBucket[]> {
  const bucket = BUCKETS[opts.every ?? 'hour'];
  const rs = await a.client.query({
    query: `SELECT toUnixTimestamp(${bucket}(r.recorded_at)) AS atSeconds, r.run AS run, category,
                   avg(r.reward) AS meanReward, count() AS n
            FROM (SELECT run, qa_id, reward, recorded_at FROM rewards FINAL) AS r
            INNER JOIN (SELECT id AS qa_id, arrayJoin(arrayDistinct(categories)) AS category FROM qa FINAL) AS q
            USING qa_id
            GROUP BY atSeconds, run, category
            ORDER BY atSeconds, run, category`,
    format: 'JSONEachRow',
  });
  const rows = z.array(RewardBucket).parse(await rs.json());
  return opts.run === undefined ? rows : rows.filter((r) => r.run === opts.run);
}

/** The report `bioalchemy rewards` prints: one line per bucket, run and topic. */
export function formatRewards(rows: readonly RewardBucket[]): string {
  if (rows.length === 0) return 'no rewards yet (trainers ack batches with rewards: POST /v1/ack)';
  const lines = rows.map(
    (r) =>
      `${new Date(r.atSeconds * 1000).toISOString().slice(0, 16).replace('T', ' ')}  ${r.run.padEnd(16)}  ${r.category.padEnd(28)}  ${r.meanReward.toFixed(3)}  ${String(r.n).padStart(7)}`,
  );
  return [
    `${'at (UTC)'.padEnd(16)}  ${'run'.padEnd(16)}  ${'topic'.padEnd(28)}  mean   ${'n'.padStart(7)}`,
    ...lines,
  ].join('\n');
}
