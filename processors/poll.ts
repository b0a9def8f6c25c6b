import type { Logger } from 'pino';
import { contentHash } from '../schemas/ids.js';
import type { PollerConfig } from '../schemas/pollers.js';
import type { ProcessorTask } from '../topology/task.js';
import { addCounts, emitItem, type IngestCounts, noCounts } from './ingest.js';
import { createPoller } from './sources/pollers/config.js';
import type { Poller } from './sources/pollers/types.js';

export interface ConfiguredPoller {
  readonly poller: Poller;
  /** Where its cursor lives in the ingest task's `cursors` store: one per distinct configuration. */
  readonly cursorKey: string;
}

export function configuredPollers(configs: readonly PollerConfig[], log: Logger): ConfiguredPoller[] {
  return configs.map((config) => ({
    poller: createPoller(config, {
      log,
      ...(process.env.NCBI_API_KEY ? { apiKey: process.env.NCBI_API_KEY } : {}),
    }),
    cursorKey: `${config.kind}:${contentHash(JSON.stringify(config))}`,
  }));
}

/**
 * One page from a poller in one step: its articles, its dead letters and the cursor after it
 * commit together, so a crash re-fetches exactly the page that was not committed.
 */
export async function pollOnce(
  task: ProcessorTask,
  p: ConfiguredPoller,
): Promise<{ done: boolean; counts: IngestCounts }> {
  const page = await p.poller.poll(task.readState<string>('cursors', p.cursorKey) ?? null);
  let counts = noCounts();
  await task.stepWith(async (ctx) => {
    counts = noCounts(); // a retried step starts over
    for (const item of page.items) emitItem(ctx, item, counts);
    ctx.store('cursors').put(p.cursorKey, page.cursor);
  });
  return { done: page.done, counts };
}

/**
 * Brings every poller up to date in turn (one ingest task, so their steps never interleave),
 * then waits idleMs and starts over, until the signal aborts; with `once`, stops when caught up.
 */
export async function pollAll(
  task: ProcessorTask,
  pollers: readonly ConfiguredPoller[],
  opts: { signal: AbortSignal; log: Logger; idleMs?: number; once?: boolean },
): Promise<IngestCounts> {
  const totals = noCounts();
  while (!opts.signal.aborted) {
    for (const p of pollers) {
      for (let done = false; !done && !opts.signal.aborted; ) {
        try {
          const page = await pollOnce(task, p);
          done = page.done;
          addCounts(totals, page.counts);
          opts.log.info({ poller: p.poller.name, ...page.counts, caughtUp: page.done }, 'polled');
        } catch (e) {
          // The HTTP layer already retried: leave this poller for the next round.
          opts.log.warn({ err: e, poller: p.poller.name }, 'poll failed; will retry next round');
          done = true;
        }
      }
    }
    if (opts.once) break;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, opts.idleMs ?? 15 * 60_000);
      opts.signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          resolve();
        },
        { once: true },
      );
    });
  }
  return totals;
}
