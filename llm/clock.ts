/**
 * Time as the flow-control layer sees it. Injected so that tests drive rate limits, backoff and
 * probes on virtual time instead of waiting (or flaking) on the real one.
 */
export interface Clock {
  now(): number;
  /** Resolves after ms, or at once when signal aborts (never rejects). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
    }),
};
