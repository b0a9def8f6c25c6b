import { Command, Option } from 'commander';
import type { RewardsOptions } from '../rewards.js';

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
    .action(async (_opts, cmd: Command) =>
      (await import('../rewards.js')).rewards(cmd.optsWithGlobals<RewardsOptions>()),
    );
}
