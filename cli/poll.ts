import { hostname, userInfo } from 'node:os';
import { Command } from 'commander';
import {
  type ConfiguredPoller,
  configuredPollers,
  type PollSummary,
  pollAll,
  skipPage,
} from '../processors/poll.js';
import {
  configOf,
  ExitStatus,
  type GlobalOptions,
  stopOnSignal,
  UsageError,
  withIngestTask,
} from './context.js';

interface PollOptions extends GlobalOptions {
  once?: boolean;
  skip?: string;
}

/** `poll --once` exit statuses beyond 0 (caught up), 1 (failed) and 2 (usage). */
export const POLL_STALLED = 3;
export const POLL_PAUSED = 4;

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
    .action((cursor: string | undefined, _opts, cmd: Command) =>
      poll(cmd.optsWithGlobals<PollOptions>(), cursor),
    );
}

async function poll(opts: PollOptions, cursor: string | undefined): Promise<void> {
  const config = configOf(opts);
  if (config.sources.length === 0)
    throw new UsageError('no pollers: add "sources" to the config file (see schemas/pollers.ts)');
  if (opts.skip !== undefined) {
    if (cursor === undefined)
      throw new UsageError('--skip needs the cursor to give up (see `bioalchemy status`)');
    const { skip } = opts;
    return withIngestTask(opts, async (task, log) => {
      const p = pollerNamed(configuredPollers(config.sources, log), skip);
      const done = await skipPage(task, p, { expected: cursor, who: operator() });
      process.stderr.write(`${p.poller.name}: skipped ${done.skipped}; now at ${done.cursor}\n`);
    });
  }
  if (cursor !== undefined)
    throw new UsageError(`unexpected argument "${cursor}" (a cursor goes with --skip)`);
  const signal = stopOnSignal();
  const summary = await withIngestTask(opts, (task, log) =>
    pollAll(task, configuredPollers(config.sources, log), { signal, log, once: opts.once ?? false }),
  );
  const { counts } = summary;
  process.stderr.write(
    `polled: ${counts.articles} new article(s), ${counts.updated} updated, ${counts.duplicates} duplicate(s), ${counts.deadLetters} dead letter(s)\n`,
  );
  if (opts.once) endOfOnce(summary);
}

/** What a --once pass left undone, and its exit status. */
function endOfOnce(summary: PollSummary): void {
  for (const s of summary.stalled)
    process.stderr.write(
      `${s.poller}: stalled since ${s.stalled.since} (${s.stalled.attempts} attempt(s)): ${s.stalled.reason}\n` +
        `  cursor kept: ${s.cursor ?? 'null'}\n` +
        `  to give that page up: bioalchemy poll --skip ${s.cursorKey} '${s.cursor ?? 'null'}'\n`,
    );
  for (const p of summary.paused)
    process.stderr.write(
      `${p.poller}: paused upstream: ${p.paused.host} asked not to be called before ${p.paused.until} (${p.paused.reason})\n`,
    );
  if (summary.stalled.length)
    throw new ExitStatus(`${summary.stalled.length} poller(s) stalled; nothing skipped`, POLL_STALLED);
  if (summary.paused.length)
    throw new ExitStatus(
      `${summary.paused.length} poller(s) paused upstream until ${summary.paused.map((p) => p.paused.until).join(', ')}`,
      POLL_PAUSED,
    );
}

function pollerNamed(pollers: ConfiguredPoller[], source: string): ConfiguredPoller {
  const byKey = pollers.find((p) => p.cursorKey === source);
  if (byKey) return byKey;
  const named = pollers.filter((p) => p.poller.name === source);
  if (named.length === 1) return named[0]!;
  const known = pollers.map((p) => `${p.poller.name} (${p.cursorKey})`).join(', ');
  throw new UsageError(
    named.length
      ? `several pollers are named "${source}": give its key, one of ${known}`
      : `no poller "${source}" in the config: one of ${known}`,
  );
}

/** Who gave data up, for the dead letter: an operator's name from the environment, else the account. */
function operator(): string {
  return process.env.BIOALCHEMY_OPERATOR || `${userInfo().username}@${hostname()}`;
}
