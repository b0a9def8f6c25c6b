/**
 * A worker's health, as its probes read it (`run --metrics-port`: /livez and /readyz).
 * - Live: the process answers. Nothing a dependency does (Kafka, ClickHouse, the LLM endpoint
 *   down) makes it fail, or an outage becomes a restart storm: those show in readiness and metrics.
 * - Ready: every processor task of this process is open (its transactional producer initialised,
 *   its state restored), each holds its group's assignment (none while a rebalance is taken in),
 *   and the process is not stopping.
 */
export interface Readiness {
  readonly ready: boolean;
  /** Why not, in words: one entry per reason. */
  readonly waiting: readonly string[];
}

/** What a task tells readiness: ProcessorTask has both. */
export interface HealthTask {
  readonly name: string;
  readonly inGroup: boolean;
}

export class Health {
  private tasks: readonly HealthTask[] | null = null;
  private stopping = false;
  /** Other conditions of readiness (the pipeline process of `run` alive, say): a reason, or null. */
  private readonly checks: (() => string | null)[] = [];

  /** The process's tasks are open. */
  running(tasks: readonly HealthTask[]): void {
    this.tasks = tasks;
  }

  /** Stopping: not ready from now on, so a Service sends nothing more while the last step commits. */
  stop(): void {
    this.stopping = true;
  }

  require(check: () => string | null): void {
    this.checks.push(check);
  }

  readiness(): Readiness {
    const waiting: string[] = [];
    if (this.stopping) waiting.push('stopping');
    if (!this.tasks) waiting.push('processors not started');
    for (const t of this.tasks ?? []) if (!t.inGroup) waiting.push(`${t.name}: no group assignment yet`);
    for (const check of this.checks) {
      const reason = check();
      if (reason) waiting.push(reason);
    }
    return { ready: waiting.length === 0, waiting };
  }
}
