import { Command } from 'commander';
import { configuredPollers, pollAll } from '../processors/poll.js';
import { configOf, type GlobalOptions, stopOnSignal, UsageError, withIngestTask } from './context.js';

interface PollOptions extends GlobalOptions {
  once?: boolean;
}

export function pollCommand(): Command {
  return new Command('poll')
    .description(
      'run the literature pollers of the config ("sources": PubMed, Europe PMC, bioRxiv) until Ctrl-C; ' +
        'each keeps its cursor in the log',
    )
    .option('--once', 'stop once every poller is caught up')
    .addHelpText(
      'after',
      `
Example:
  $ bioalchemy poll --once --config pubmed.json   # with "sources": [{"kind": "pubmed", "since": "2024-03-01"}]`,
    )
    .action((_opts, cmd: Command) => poll(cmd.optsWithGlobals<PollOptions>()));
}

async function poll(opts: PollOptions): Promise<void> {
  const config = configOf(opts);
  if (config.sources.length === 0)
    throw new UsageError('no pollers: add "sources" to the config file (see schemas/pollers.ts)');
  const signal = stopOnSignal();
  const totals = await withIngestTask(opts, (task, log) =>
    pollAll(task, configuredPollers(config.sources, log), { signal, log, once: opts.once ?? false }),
  );
  process.stderr.write(
    `polled: ${totals.articles} new article(s), ${totals.updated} updated, ${totals.duplicates} duplicate(s), ${totals.deadLetters} dead letter(s)\n`,
  );
}
