import { openClickHouse } from '../analytics/clickhouse.js';
import { formatRewards, rewardsOverTime } from '../processors/feeder/rewards-report.js';
import { configOf } from './context.js';
import type { GlobalOptions } from './usage.js';

export interface RewardsOptions extends GlobalOptions {
  run?: string;
  every: 'minute' | 'hour' | 'day';
  json?: boolean;
}

export async function rewards(opts: RewardsOptions): Promise<void> {
  const config = configOf(opts);
  const analytics = await openClickHouse(config.clickhouse, { connection: config.connection.clickhouse });
  try {
    const rows = await rewardsOverTime(analytics, {
      every: opts.every,
      ...(opts.run === undefined ? {} : { run: opts.run }),
    });
    process.stdout.write(
      opts.json ? rows.map((r) => `${JSON.stringify(r)}\n`).join('') : `${formatRewards(rows)}\n`,
    );
  } finally {
    await analytics.close();
  }
}
