import type { LlmBudget } from '../schemas/llm.js';
import type { Clock } from './clock.js';

const DAY_MS = 86_400_000;

/**
 * The day's spend cap. Once it is reached, calls wait in `admit` (none is dropped) until the next
 * UTC day or a higher cap (`set`). Calls already in flight finish, so a day may overshoot by them.
 */
export class Budget {
  private day: number;
  private tokens = 0;
  private usd = 0;
  private paused = false;
  private waiters: (() => void)[] = [];
  private rollover?: AbortController;

  constructor(
    private limit: LlmBudget,
    private readonly clock: Clock,
    private readonly onPause: (paused: boolean, why: string) => void,
  ) {
    this.day = this.today();
  }

  async admit(): Promise<void> {
    for (let why = this.exceeded(); why; why = this.exceeded()) {
      if (!this.paused) {
        this.paused = true;
        this.onPause(true, why);
      }
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        this.waitForRollover();
      });
    }
    if (this.paused) {
      this.paused = false;
      this.onPause(false, 'budget available');
    }
  }

  spend(tokens: number, usd: number): void {
    this.exceeded();
    this.tokens += tokens;
    this.usd += usd;
  }

  /** USD spent since the start of the UTC day. */
  spentUsd(): number {
    this.exceeded();
    return this.usd;
  }

  /** The daily USD cap, or undefined when none is set. */
  get usdPerDay(): number | undefined {
    return this.limit.usdPerDay;
  }

  set(limit: LlmBudget): void {
    this.limit = limit;
    this.wake();
  }

  /** Why no call may start now, or undefined when one may; starts a new day's count when one began. */
  private exceeded(): string | undefined {
    const today = this.today();
    if (today !== this.day) {
      this.day = today;
      this.tokens = 0;
      this.usd = 0;
    }
    const { tokensPerDay, usdPerDay } = this.limit;
    if (tokensPerDay !== undefined && this.tokens >= tokensPerDay) {
      return `${this.tokens} tokens spent today, budget ${tokensPerDay}`;
    }
    if (usdPerDay !== undefined && this.usd >= usdPerDay) {
      return `$${this.usd.toFixed(4)} spent today, budget $${usdPerDay}`;
    }
    return undefined;
  }

  private waitForRollover(): void {
    if (this.rollover) return;
    this.rollover = new AbortController();
    void this.clock
      .sleep((this.day + 1) * DAY_MS - this.clock.now(), this.rollover.signal)
      .then(() => this.wake());
  }

  private wake(): void {
    this.rollover?.abort();
    this.rollover = undefined;
    for (const release of this.waiters.splice(0)) release();
  }

  private today(): number {
    return Math.floor(this.clock.now() / DAY_MS);
  }
}
