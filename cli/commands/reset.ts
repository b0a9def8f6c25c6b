import { Command } from 'commander';
import type { ResetOptions } from '../reset.js';

export function resetCommand(): Command {
  return new Command('reset')
    .description(
      "delete one app's topics (changelogs included) and consumer groups on Kafka, after a confirmation",
    )
    .requiredOption('--app <name>', "the app (the config's app: the prefix of its Kafka names)")
    .option('--yes', 'do not ask for confirmation')
    .addHelpText(
      'after',
      `
Stop the app's workers first: a running member keeps its group alive. Transactional ids cannot
be deleted; they expire on the broker.

Examples:
  $ bioalchemy reset --app staging
  $ bioalchemy reset --app ci-1234 --yes --config kafka.json`,
    )
    .action(async (_opts, cmd: Command) =>
      (await import('../reset.js')).reset(cmd.optsWithGlobals<ResetOptions>()),
    );
}
