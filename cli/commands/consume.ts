import { Command } from 'commander';
import type { ConsumeOptions } from '../consume.js';
import { wholeNumber } from '../usage.js';

export function consumeCommand(): Command {
  return new Command('consume')
    .description('print the records of a topic as JSON lines, from the beginning')
    .argument('<topic>', 'a topic of the pipeline (see "topology describe")')
    .option('--limit <n>', 'stop after n records', wholeNumber)
    .option('--follow', 'keep waiting for new records until Ctrl-C')
    .option('--with-meta', 'print partition, offset, key and timestamp around each value')
    .addHelpText(
      'after',
      `
Examples:
  $ bioalchemy consume dlq --limit 20
  $ bioalchemy consume qa.classified --follow --with-meta`,
    )
    .action(async (topic: string, _opts, cmd: Command) =>
      (await import('../consume.js')).consume(topic, cmd.optsWithGlobals<ConsumeOptions>()),
    );
}
