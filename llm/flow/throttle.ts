import type { Clock } from '../clock.js';
import { Semaphore } from './semaphore.js';
import { TokenBucket } from './token-bucket.js';

export interface Limits {
  concurrency?: number;
  requestsPerMinute?: number;
  tokensPerMinute?: number;
}

/** A request let through a throttle; `leave` frees its slot and settles its token estimate. */
export interface Ticket {
  leave(tokensUsed: number): void;
}

/** Concurrency, requests/min and tokens/min together: what an endpoint (or a stage of it) allows. */
export class Throttle {
  private readonly slots?: Semaphore;
  private readonly requests?: TokenBucket;
  private readonly tokens?: TokenBucket;

  constructor(limits: Limits, clock: Clock) {
    if (limits.concurrency) this.slots = new Semaphore(limits.concurrency);
    if (limits.requestsPerMinute) this.requests = new TokenBucket(limits.requestsPerMinute, clock);
    if (limits.tokensPerMinute) this.tokens = new TokenBucket(limits.tokensPerMinute, clock);
  }

  /** `estimate` is charged now, before the real count is known, so a burst cannot overshoot. */
  async enter(estimate: number): Promise<Ticket> {
    await this.slots?.acquire();
    await this.requests?.take(1);
    await this.tokens?.take(estimate);
    return {
      leave: (used) => {
        this.tokens?.settle(used - estimate);
        this.slots?.release();
      },
    };
  }
}
