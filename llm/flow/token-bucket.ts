import type { Clock } from '../clock.js';

/**
 * A per-minute allowance (requests or tokens) as a token bucket holding one minute's worth, refilled
 * continuously. Takers are served in arrival order, so a large request is not starved by small ones.
 * The level may go below zero: a request larger than the bucket still passes once it is full, and
 * `settle` charges what a call really used after its estimate; later takers wait off the debt.
 */
export class TokenBucket {
  private level: number;
  private last: number;
  private readonly queue: { n: number; resolve: () => void }[] = [];
  private pumping = false;

  constructor(
    private readonly perMinute: number,
    private readonly clock: Clock,
  ) {
    this.level = perMinute;
    this.last = clock.now();
  }

  take(n: number): Promise<void> {
    return new Promise((resolve) => {
      this.queue.push({ n, resolve });
      if (!this.pumping) void this.pump();
    });
  }

  /** Charges (or refunds, when negative) the difference between an estimate and the real use. */
  settle(delta: number): void {
    this.refill();
    this.level = Math.min(this.perMinute, this.level - delta);
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    while (this.queue.length) {
      this.refill();
      const head = this.queue[0]!;
      const need = Math.min(head.n, this.perMinute);
      if (this.level >= need) {
        this.level -= head.n;
        this.queue.shift();
        head.resolve();
        continue;
      }
      await this.clock.sleep(Math.ceil(((need - this.level) / this.perMinute) * 60_000));
    }
    this.pumping = false;
  }

  private refill(): void {
    const now = this.clock.now();
    this.level = Math.min(this.perMinute, this.level + ((now - this.last) / 60_000) * this.perMinute);
    this.last = now;
  }
}
