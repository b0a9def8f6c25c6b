import { z } from 'zod';
import type { SourceItem } from '../items.js';
import { apiDeadLetter, type Problem } from './api-items.js';
import { isDay } from './days.js';
import { HttpSettings, PoliteHttp } from './http.js';
import type { HostRateLimiter } from './rate-limit.js';
import { type PollerLog, silentLog } from './types.js';

/** Settings every poller shares; each poller's config extends these. */
export const CommonPollerConfig = z.object({
  since: z
    .string()
    .refine(isDay, 'a date as YYYY-MM-DD')
    .describe('first day to read when there is no cursor yet'),
  lagDays: z
    .number()
    .int()
    .min(0)
    .max(30)
    .default(1)
    .describe('days a finished day is left to settle before it is read (UTC)'),
  baseUrl: z.url().optional().describe("the API's root; the public endpoint by default"),
  requestsPerSecond: z.number().positive().optional().describe("the API's polite rate by default"),
  maxPageFailures: z
    .number()
    .int()
    .min(1)
    .default(3)
    .describe('polls an unreadable listing page is retried on before it is given up as a dead letter'),
  http: HttpSettings.optional(),
});

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
