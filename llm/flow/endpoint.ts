import type { Clock } from '../clock.js';
import { TransientError, type TransientReason } from '../errors.js';
import { type BackoffOptions, backoffMs } from './backoff.js';
import { Circuit, type CircuitOptions } from './circuit.js';
import { type Limits, Throttle, type Ticket } from './throttle.js';

export interface EndpointOptions {
  limits: Limits;
  retry: BackoffOptions & { maxAttempts: number };
  circuit: CircuitOptions;
}

export interface EndpointHooks {
  onRetry(reason: TransientReason, delayMs: number): void;
  onDown(down: boolean): void;
}

/** What one attempt must report so the token allowance can be settled. */
export interface Attempted {
  tokens: number;
}

/** The request failed transiently more often than retry.maxAttempts while its endpoint answered others. */
export class AttemptsExhausted extends Error {
  constructor(readonly last: TransientError) {
    super(last.message);
  }
}

/**
 * One model endpoint (a base URL, or the local model) and the flow control in front of it: its
 * throttle, its circuit, and retries. Owns every retry: providers make exactly one request per call.
 */
export class Endpoint {
  private readonly throttle: Throttle;
  private readonly circuit: Circuit;

  constructor(
    readonly name: string,
    private readonly opts: EndpointOptions,
    private readonly clock: Clock,
    private readonly hooks: EndpointHooks,
  ) {
    this.throttle = new Throttle(opts.limits, clock);
    this.circuit = new Circuit(opts.circuit, clock, hooks.onDown);
  }

  /**
   * Sends `attempt` until it succeeds. `stage` is the caller's own throttle, entered before the
   * endpoint's so that a throttled stage does not hold endpoint slots while it waits.
   */
  async send<T extends Attempted>(
    stage: Throttle,
    estimate: number,
    attempt: () => Promise<T>,
  ): Promise<{ reply: T; attempts: number }> {
    let attempts = 0;
    let counted = 0;
    for (;;) {
      const probe = await this.circuit.pass();
      const tickets: Ticket[] = [await stage.enter(estimate), await this.throttle.enter(estimate)];
      attempts++;
      let reply: T;
      try {
        reply = await attempt();
      } catch (e) {
        // A failed request's real token use is unknown: the estimate stays charged.
        for (const t of tickets) t.leave(estimate);
        if (!(e instanceof TransientError)) throw e;
        const down = this.circuit.failure(probe);
        // Failures while the endpoint is down are the endpoint's, not this request's: they never
        // use up its attempts, so an outage delays calls and drops none.
        if (!down && ++counted >= this.opts.retry.maxAttempts) throw new AttemptsExhausted(e);
        const delay = down ? (e.retryAfterMs ?? 0) : backoffMs(counted, this.opts.retry, e.retryAfterMs);
        this.hooks.onRetry(e.reason, delay);
        if (delay > 0) await this.clock.sleep(delay);
        continue;
      }
      for (const t of tickets) t.leave(reply.tokens);
      this.circuit.success();
      return { reply, attempts };
    }
  }
}
