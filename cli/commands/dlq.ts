import { Command } from 'commander';
import type { DlqReplayOptions } from '../dlq.js';

const list = (value: string, previous: string[] = []) => [...previous, ...value.split(',').filter(Boolean)];

export function dlqCommand(): Command {
  const dlq = new Command('dlq').description('dead letters: run them again once what failed them is fixed');
  dlq
    .command('replay')
    .description(
      'append the inputs of the matching dead letters to their topics again, each dead letter once ' +
        '(a second replay of the same ones does nothing); then `run` processes them',
    )
    .option('--code <codes>', 'only dead letters of these codes (comma-separated, repeatable)', list)
    .option(
      '--processor <names>',
      'only dead letters of these processors (comma-separated, repeatable)',
      list,
    )
    .option(
      '--since <time>',
      'only dead letters written at or after this time (ISO 8601, e.g. 2026-12-06T00:00Z)',
    )
    .option('--until <time>', 'only dead letters written before this time (ISO 8601)')
    .option('--dry-run', 'say what would be replayed, and write nothing')
    .addHelpText(
      'after',
      `
Only a dead letter whose input is still in the log can be replayed (the input is appended again, the
same key and partition); one read from a file or an API, or whose input retention removed, is listed
with why. The ids replayed are kept on the compacted topic dlq.replayed, written in the same atomic
append as the inputs. A filter that matches nothing says so and exits 0.

Examples:
  $ bioalchemy dlq replay --code llm-request-refused && bioalchemy run --until-idle
  $ bioalchemy dlq replay --processor extract --since 2026-12-05 --dry-run`,
    )
    .action(async (_opts, cmd: Command) =>
      (await import('../dlq.js')).replayDeadLetters(cmd.optsWithGlobals<DlqReplayOptions>()),
    );
  return dlq;
}
