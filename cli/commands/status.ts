import { Command } from 'commander';
import type { StatusOptions } from '../status.js';

export function statusCommand(): Command {
  return new Command('status')
    .description(
      "each processor's consumer group: its members, their partitions, and the lag per partition; each literature poller: its cursor, and whether it is stalled or paused upstream",
    )
    .option('--json', 'one JSON object per group, then one per poller ({"poller": …}), one a line')
    .addHelpText(
      'after',
      `
On Kafka every group of the config's app is shown, with each worker (its --worker-id is in the
member's client id); on the embedded log one process runs every processor.

Examples:
  $ bioalchemy status
  $ bioalchemy status --json --config prod.json`,
    )
    .action(async (_opts, cmd: Command) =>
      (await import('../status.js')).status(cmd.optsWithGlobals<StatusOptions>()),
    );
}
