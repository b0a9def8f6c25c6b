import { Command } from 'commander';
import type { ProduceOptions } from '../produce.js';

export function produceCommand(): Command {
  return new Command('produce')
    .description(
      "validate JSON lines (stdin or --file) against the topic's schema and append them, all or nothing",
    )
    .argument('<topic>', 'a topic of the pipeline (see "topology describe")')
    .option('--file <file>', 'read the lines from this file instead of stdin')
    .option('--key <field>', "take each record's key from this field of the value")
    .addHelpText(
      'after',
      `
Examples:
  $ bioalchemy produce articles --file articles.jsonl --key id
  $ cat qa.jsonl | bioalchemy produce qa.candidates`,
    )
    .action(async (topic: string, _opts, cmd: Command) =>
      (await import('../produce.js')).produce(topic, cmd.optsWithGlobals<ProduceOptions>()),
    );
}
