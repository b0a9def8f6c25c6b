import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polite spacing per host, shared by every poller in the process (NCBI counts requests per key
 * or IP, not per poller). Requests to one host go one at a time, and each starts at least
 * `intervalMs` after the previous one was answered. Spacing the starts alone is not enough: a
 * first request slowed by a TLS handshake can reach the server just before a second one sent
 * an interval later on a warm connection. Anchored on the answer, the server sees requests at
 * least an interval apart whatever the latency, at the cost of throughput this workload (a few
 * thousand articles a day per API) does not need.
 */
export class HostRateLimiter {
  private readonly tails = new Map<string, Promise<void>>();
  private readonly readyAt = new Map<string, number>();

  constructor(private readonly clock: () => number = Date.now) {}

  /** Waits for this host's turn; call the returned function once the response has arrived (or failed). */
  async acquire(host: string, intervalMs: number, signal?: AbortSignal): Promise<() => void> {
    const previous = this.tails.get(host) ?? Promise.resolve();
    let pass!: () => void;
    const mine = new Promise<void>((resolve) => {
      pass = resolve;
    });
    this.tails.set(
      host,
      previous.then(() => mine),
    );
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.readyAt.set(host, Math.max(this.readyAt.get(host) ?? 0, this.clock() + intervalMs));
      pass();
    };
    try {
      await abortable(previous, signal);
      const wait = (this.readyAt.get(host) ?? 0) - this.clock();
      if (wait > 0) await sleep(wait, undefined, signal ? { signal } : {});
    } catch (e) {
      // Given up while queued: pass the turn on as soon as it comes, without spending an interval.
      released = true;
      void previous.then(pass);
      throw e;
    }
    return release;
  }

  /** The server asked for a pause (Retry-After): nobody in the process calls it before then. */
  pauseUntil(host: string, atMs: number): void {
    this.readyAt.set(host, Math.max(this.readyAt.get(host) ?? 0, atMs));
  }
}

function abortable(p: Promise<void>, signal?: AbortSignal): Promise<void> {
  if (!signal) return p;
  signal.throwIfAborted();
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}

export const sharedRateLimiter = new HostRateLimiter();
