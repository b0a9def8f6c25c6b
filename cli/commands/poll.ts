import { Command } from 'commander';
import type { PollOptions } from '../poll.js';
import { POLL_PAUSED, POLL_STALLED } from '../usage.js';

export function pollCommand(): Command {
  return new Command('poll')
    .description(
      'run the literature pollers of the config ("sources": PubMed, Europe PMC, bioRxiv) until Ctrl-C; ' +
        'each keeps its cursor in the log',
    )
    .argument('[cursor]', 'with --skip: the cursor to give up, exactly as `bioalchemy status` shows it')
    .option('--once', 'stop once every poller is caught up, stalled or paused')
    .option(
      '--skip <source>',
      'give up the page the poller <source> (its name, or its key from `bioalchemy status`) is stalled on, at [cursor]',
    )
    .addHelpText(
      'after',
      `
A page that cannot be read (an error body such as NCBI's "ERROR", an empty or malformed body, 5xx,
a time-out) is never skipped: the poller keeps its cursor, is shown as stalled in
\`bioalchemy status\`, /metrics and the dashboard, and asks again with a growing backoff (the
sources' stallBackoffMs..maxStallBackoffMs; stallAlertAfterMs raises an alert). A host's
Retry-After is kept with the cursor: no later poll, in this process or another, calls it earlier.
Only --skip gives data up: it moves the cursor past the page and writes a dead letter naming who
skipped what (env BIOALCHEMY_OPERATOR, else user@host). Stop \`run\`/\`poll\` before skipping.

Exit status of --once: 0 every poller caught up; ${POLL_STALLED} a poller is stalled on a page it cannot
read (its cursor kept; poll again later); ${POLL_PAUSED} a host asked for a pause (Retry-After) that is not
over, and nothing was asked of it; 1 failed; 2 usage mistake. Stalled wins over paused.

Examples:
  $ bioalchemy poll --once --config pubmed.json   # with "sources": [{"kind": "pubmed", "since": "2024-03-01"}]
  $ bioalchemy poll --skip pubmed '{"v":1,"day":"2024-03-04","after":null,"q":"1f2e3d4c5b6a"}'`,
    )
    .action(async (cursor: string | undefined, _opts, cmd: Command) =>
      (await import('../poll.js')).poll(cmd.optsWithGlobals<PollOptions>(), cursor),
    );
}
