import { SingleBar } from 'cli-progress';

/**
 * Progress of long CLI work on stderr: a bar on a terminal, and where stderr is a file or a
 * pipe (CI, logs) a plain line every few seconds instead of control characters.
 */
export class Progress {
  private readonly bar: SingleBar | null;
  private done_ = 0;
  private itemCount = 0;
  private lastLine = Date.now();

  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly unit: string,
  ) {
    this.bar = process.stderr.isTTY
      ? new SingleBar({
          stream: process.stderr,
          format: `${label} [{bar}] {value}/{total} ${unit} | {items} records | {eta_formatted} left`,
          hideCursor: true,
        })
      : null;
    this.bar?.start(total, 0, { items: 0 });
  }

  items(n: number): void {
    this.itemCount += n;
    this.bar?.update(this.done_, { items: this.itemCount });
    this.maybeLine();
  }

  tick(): void {
    this.done_++;
    this.bar?.update(this.done_, { items: this.itemCount });
    this.maybeLine();
  }

  done(): void {
    this.bar?.stop();
  }

  private maybeLine(): void {
    if (this.bar || Date.now() - this.lastLine < 2000) return;
    this.lastLine = Date.now();
    process.stderr.write(
      `${this.label}: ${this.done_}/${this.total} ${this.unit}, ${this.itemCount} records\n`,
    );
  }
}
