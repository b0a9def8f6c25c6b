import { hostname, userInfo } from 'node:os';
import {
  type ConfiguredPoller,
  configuredPollers,
  type PollSummary,
  pollAll,
  skipPage,
} from '../processors/poll.js';
import { configOf, stopOnSignal, withIngestTask } from './context.js';
import { ExitStatus, type GlobalOptions, POLL_PAUSED, POLL_STALLED, UsageError } from './usage.js';

export interface PollOptions extends GlobalOptions {
  once?: boolean;
  skip?: string;
}

export async function poll(opts: PollOptions, cursor: string | undefined): Promise<void> {
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
