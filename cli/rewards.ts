import { Command, Option } from 'commander';
import { openClickHouse } from '../analytics/clickhouse.js';
import { formatRewards, rewardsOverTime } from '../processors/feeder/rewards-report.js';
import { configOf, type GlobalOptions } from './context.js';

interface RewardsOptions extends GlobalOptions {
  run?: string;
  every: 'minute' | 'hour' | 'day';
  json?: boolean;
}

export function rewardsCommand(): Command {
  return new Command('rewards')
    .description('mean reward acked by trainers, by topic, over time')
    .option('--run <run>', 'only this run')
    .addOption(
      new Option('--every <bucket>', 'time bucket').choices(['minute', 'hour', 'day']).default('hour'),
    )
    .option('--json', 'JSON lines instead of a table')
    .addHelpText(
      'after',
      `
Examples:
  $ bioalchemy rewards
  $ bioalchemy rewards --run grpo-1 --every minute`,
    )
    .action((_opts, cmd: Command) => rewards(cmd.optsWithGlobals<RewardsOptions>()));
}

async function rewards(opts: RewardsOptions): Promise<void> {
  const analytics = await openClickHouse(configOf(opts).clickhouse);
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
