export interface BackoffOptions {
  baseDelayMs: number;
  maxDelayMs: number;
}

/**
 * Wait before retry number `retry` (1-based): exponential, capped, with "equal jitter" (half fixed,
 * half random) so that callers that failed together do not come back together, yet never at once.
 * An endpoint's Retry-After is a floor.
 */
export function backoffMs(
  retry: number,
  opts: BackoffOptions,
  retryAfterMs = 0,
  random = Math.random,
): number {
  const ceiling = Math.min(opts.maxDelayMs, opts.baseDelayMs * 2 ** (retry - 1));
  return Math.max(retryAfterMs, ceiling / 2 + (random() * ceiling) / 2);
}
