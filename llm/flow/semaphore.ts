/** At most `limit` holders at once; waiters are served in arrival order. */
export class Semaphore {
  private held = 0;
  private readonly waiters: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  async acquire(): Promise<void> {
    if (this.held < this.limit) {
      this.held++;
      return;
    }
    // The slot passes straight from release() to the waiter, so a newcomer cannot jump the queue.
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.held--;
  }
}
