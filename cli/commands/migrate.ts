import { Command } from 'commander';
import type { GlobalOptions } from '../usage.js';

export function migrateCommand(): Command {
  return new Command('migrate')
    .description(
      "bring the deployment up to date before workers start: the pipeline's topics (with their partitions) and registry subjects, and ClickHouse's tables; safe to run again",
    )
    .addHelpText(
      'after',
      `
What a worker would do at its start, done once: the Helm chart runs it as a pre-install and
pre-upgrade hook, so N workers of a new version never race to migrate, and a registry that
refuses a schema stops the upgrade before any pod is replaced.

Example:
  $ bioalchemy migrate --config prod.json`,
    )
    .action(async (_opts, cmd: Command) =>
      (await import('../migrate.js')).migrate(cmd.optsWithGlobals<GlobalOptions>()),
    );
}
