import type { z } from 'zod';
import type { HttpSettings } from '../../schemas/pollers.js';
import type { Problem } from './api-items.js';
import { PoliteHttp } from './http.js';
import type { HostRateLimiter } from './rate-limit.js';
import { type PollerLog, silentLog, UnreadablePage } from './types.js';

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

/** Nothing of a page that cannot be read is used: the poll throws and the cursor stays. */
export function unreadable(problem: Problem): never {
  throw new UnreadablePage(problem.reason, problem.url, problem.payload);
}
