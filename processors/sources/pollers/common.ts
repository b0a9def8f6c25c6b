import type { z } from 'zod';
import type { HttpSettings } from '../../../schemas/pollers.js';
import type { SourceItem } from '../items.js';
import { apiDeadLetter, type Problem } from './api-items.js';
import { PoliteHttp } from './http.js';
import type { HostRateLimiter } from './rate-limit.js';
import { type PollerLog, silentLog } from './types.js';

/** What the runtime hands a poller besides its config: injectable for tests, defaulted otherwise. */
export interface PollerDeps {
  /** Named `client` because `http` is the settings block of the config. */
  client?: PoliteHttp;
  limiter?: HostRateLimiter;
  log?: PollerLog;
  fetch?: typeof fetch;
  now?: () => Date;
}

export function resolveDeps(
  settings: z.input<typeof HttpSettings> | undefined,
  deps: PollerDeps,
): { http: PoliteHttp; log: PollerLog; now: () => Date } {
  const log = deps.log ?? silentLog;
  return {
    http:
      deps.client ??
      new PoliteHttp(settings ?? {}, {
        log,
        ...(deps.limiter ? { limiter: deps.limiter } : {}),
        ...(deps.fetch ? { fetch: deps.fetch } : {}),
      }),
    log,
    now: deps.now ?? (() => new Date()),
  };
}

/** `${base}/${path}` whether or not the configured base ends in a slash. */
export const endpoint = (base: string, path: string) => new URL(path, base.endsWith('/') ? base : `${base}/`);

/**
 * A listing page the poller cannot read (junk JSON, an HTML maintenance page served as 200, a
 * broken XML body). Often transient, so it is retried on later polls, the count kept in the
 * cursor; after `maxFailures` it is given up: one dead letter names it and what was skipped, and
 * the cursor moves past it, so one bad page cannot wedge the stream.
 */
export function badPage<C>(opts: {
  problem: Problem;
  failures: number;
  maxFailures: number;
  /** What giving up loses, for the dead letter: 'the rest of 2024-03-04', 'PMIDs 1, 2'. */
  skipped: string;
  retry: (failures: number) => C;
  skip: () => C;
  processor: string;
  log: PollerLog;
}): { items: SourceItem[]; cursor: C; gaveUp: boolean } {
  const failures = opts.failures + 1;
  const fields = { processor: opts.processor, url: opts.problem.url, reason: opts.problem.reason, failures };
  if (failures < opts.maxFailures) {
    opts.log.warn(fields, 'unreadable page; retrying it on a later poll');
    return { items: [], cursor: opts.retry(failures), gaveUp: false };
  }
  opts.log.warn({ ...fields, skipped: opts.skipped }, 'unreadable page given up');
  const reason = `${opts.problem.reason}; given up after ${failures} attempt(s), skipped ${opts.skipped}`;
  return {
    items: [apiDeadLetter({ ...opts.problem, reason }, opts.processor)],
    cursor: opts.skip(),
    gaveUp: true,
  };
}
