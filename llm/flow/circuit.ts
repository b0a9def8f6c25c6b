import type { Clock } from '../clock.js';

export interface CircuitOptions {
  failureThreshold: number;
  probeIntervalMs: number;
}

/**
 * Marks an endpoint down after `failureThreshold` failures in a row. While it is down, callers wait
 * in `pass()` (nothing is dropped) and one of them at a time, every probeIntervalMs, goes through
 * as the probe; the first success anywhere brings it back up and releases them all.
 */
export class Circuit {
  private failures = 0;
  private down = false;
  private probing = false;
  private timerSet = false;
  private nextProbeAt = 0;
  private readonly waiters: ((probe: boolean) => void)[] = [];

  constructor(
    private readonly opts: CircuitOptions,
    private readonly clock: Clock,
    private readonly onChange: (down: boolean) => void,
  ) {}

  /**
   * Resolves when the caller may send; true when its request is the probe. Rejects with the
   * signal's reason once it aborts (the process is stopping): the waiter is gone, no probe is its.
   */
  pass(signal?: AbortSignal): Promise<boolean> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (!this.down) return Promise.resolve(false);
    return new Promise((resolve, reject) => {
      const waiter = (probe: boolean) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(probe);
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
      this.schedule();
    });
  }

  /**
   * Marks the endpoint down at once, whatever the count: its fault is not one that passes by
   * itself (llm/flow/faults.ts). Callers wait and probe as for an outage. Says whether it was up.
   */
  trip(probe: boolean): boolean {
    const wasUp = !this.down;
    if (probe) this.probing = false;
    if (wasUp) {
      this.down = true;
      this.onChange(true);
    }
    this.nextProbeAt = this.clock.now() + this.opts.probeIntervalMs;
    this.schedule();
    return wasUp;
  }

  success(): void {
    this.failures = 0;
    if (!this.down) return;
    this.down = false;
    this.probing = false;
    this.onChange(false);
    for (const release of this.waiters.splice(0)) release(false);
  }

  /** Returns whether the endpoint is down now (in which case the failure is not the request's fault). */
  failure(probe: boolean): boolean {
    this.failures++;
    if (probe) {
      this.probing = false;
      this.nextProbeAt = this.clock.now() + this.opts.probeIntervalMs;
      this.schedule();
    } else if (!this.down && this.failures >= this.opts.failureThreshold) {
      this.down = true;
      this.nextProbeAt = this.clock.now() + this.opts.probeIntervalMs;
      this.onChange(true);
    }
    return this.down;
  }

  // One timer at a time, set only while someone waits: an idle down endpoint costs nothing.
  private schedule(): void {
    if (this.timerSet || this.probing || !this.down || !this.waiters.length) return;
    this.timerSet = true;
    void this.clock.sleep(Math.max(0, this.nextProbeAt - this.clock.now())).then(() => {
      this.timerSet = false;
      if (!this.down || this.probing) return;
      const next = this.waiters.shift();
      if (!next) return;
      this.probing = true;
      next(true);
    });
  }
}
