import type { EndpointFacts } from '../../schemas/llm.js';
import type { Clock } from '../clock.js';
import { CutReplyError, TransientError, type TransientReason } from '../errors.js';
import { AdaptiveLimit } from './adaptive-limit.js';
import { type BackoffOptions, backoffMs } from './backoff.js';
import { Circuit, type CircuitOptions } from './circuit.js';
import {
  type EndpointFault,
  endpointIfRepeated,
  FaultWatch,
  faultOf,
  REPEATS_FOR_REFUSAL,
  type RequestIdentity,
  serverMessage,
  statusOf,
  whoseAlone,
} from './faults.js';
import { type Limits, Throttle, type Ticket } from './throttle.js';

export interface EndpointOptions {
  limits: Limits;
  retry: BackoffOptions & { maxAttempts: number };
  circuit: CircuitOptions;
  /** The decoding slots the server says it has, if it says (llama-server's /props): asked once. */
  statedCapacity?: () => Promise<number | undefined>;
  /**
   * What an earlier run learned of a model's server (EndpointMemory): the limit it took, where a
   * found limit starts; whether it takes one request at a time.
   */
  learned?: (model: string) => EndpointFacts;
}

/** What the adaptive limit of one model of an endpoint stands at (the run summary, /metrics, llm check). */
export interface ConcurrencyState {
  endpoint: string;
  model: string;
  limit: number;
  inFlight: number;
  /** concurrency (config), or the slots the server states where fewer. */
  bound: number;
  stated: number | undefined;
  /** The server ends the stream in progress when another request arrives: one at a time. */
  oneAtATime: boolean;
  queueingSeen: number;
}

export interface EndpointHooks {
  onRetry(reason: TransientReason, delayMs: number): void;
  /** `byFault`: paused for an endpoint fault (onFault says which), not an outage. */
  onDown(down: boolean, byFault: boolean): void;
  /** A confirmed endpoint fault (once per fault), or null once the endpoint accepts requests again. */
  onFault?(fault: EndpointFault | null): void;
  /** Every request sent, by outcome: "answered", an HTTP status, a transient reason, "aborted". */
  onRequest?(outcome: string): void;
  /**
   * The model's server ends the stream in progress whenever another request arrives: it is sent
   * one request at a time from now on. Told once per model, when it is found (not when an earlier
   * run's finding is read).
   */
  onOneAtATime?(model: string): void;
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
  private readonly watch = new FaultWatch();
  /** The endpoint's fault: suspected (paused, awaiting a probe's confirmation) or confirmed (reported). */
  private fault: { fault: EndpointFault; confirmed: boolean } | null = null;
  /** Requests in flight, any model: a stream cut while another is may be that one's doing. */
  private inFlight = 0;
  /** Streams cut while another request was in flight, since a reply was last answered. */
  private cutByArrivals = 0;

  constructor(
    readonly name: string,
    private readonly opts: EndpointOptions,
    private readonly clock: Clock,
    private readonly hooks: EndpointHooks,
  ) {
    this.throttle = new Throttle(opts.limits, clock);
    this.circuit = new Circuit(opts.circuit, clock, (down) => hooks.onDown(down, this.fault !== null));
  }

  /**
   * Models the endpoint does not serve (a 404 naming the model), each with a gate of its own: only
   * the stages asking for that model wait, and one of their calls probes now and then.
   */
  private readonly models = new Map<string, { gate: Circuit; fault: EndpointFault }>();

  /** The confirmed faults that pause this endpoint, or some of its models, now. */
  confirmedFaults(): EndpointFault[] {
    return [
      ...(this.fault?.confirmed ? [this.fault.fault] : []),
      ...[...this.models.values()].map((m) => m.fault),
    ];
  }

  /**
   * Sends `attempt` until it succeeds, or fails for a reason of its input's own (the table in
   * faults.ts). `stage` is the caller's own throttle, entered before the endpoint's so that a
   * throttled stage does not hold endpoint slots while it waits. While the endpoint is down or at
   * fault, calls wait and one probes now and then: an endpoint's fault never fails a call. Aborting
   * `signal` rejects with its reason, wherever the call is. `attempt` calls `started` when the
   * server begins its reply (a streamed reply's first chunk): the adaptive limit's earliest signal.
   */
  async send<T extends Attempted>(
    stage: Throttle,
    estimate: number,
    attempt: (started: () => void) => Promise<T>,
    who?: RequestIdentity,
    signal?: AbortSignal,
  ): Promise<{ reply: T; attempts: number }> {
    let attempts = 0;
    let counted = 0;
    for (;;) {
      const probe = await this.circuit.pass(signal);
      const model = who ? this.models.get(who.model) : undefined;
      const modelProbe = model ? await model.gate.pass(signal) : false;
      const tickets: Ticket[] = [await stage.enter(estimate), await this.throttle.enter(estimate)];
      const limit = await this.limitOf(who?.model ?? '');
      const permit = await limit.acquire();
      attempts++;
      let reply: T;
      const sentAt = this.clock.now();
      this.inFlight++;
      try {
        if (signal?.aborted) throw signal.reason;
        reply = await attempt(() => permit.started(this.clock.now() - sentAt));
      } catch (e) {
        // Another request in flight when this one was cut: the one the server may have cut it for.
        const company = this.inFlight > 1;
        this.inFlight--;
        // A failed request's real token use is unknown: the estimate stays charged.
        for (const t of tickets) t.leave(estimate);
        if (!signal?.aborted && overloaded(e)) permit.overloaded();
        else permit.release();
        if (signal?.aborted) {
          this.hooks.onRequest?.('aborted');
          if (probe) this.circuit.failure(true);
          if (modelProbe) model?.gate.failure(true);
          throw signal.reason;
        }
        this.hooks.onRequest?.(outcomeOf(e));
        if (e instanceof CutReplyError && company) {
          // The server may have ended it for the other: not this request's failure, nor evidence
          // of a fault. Sent again, uncounted.
          this.cutByArrival(limit, who?.model ?? '');
          this.hooks.onRetry('cut', 0);
          if (probe) this.circuit.failure(true);
          if (modelProbe) model?.gate.failure(true);
          continue;
        }
        if (who && unknownModel(e)) {
          // This model's fault, not the endpoint's: its gate pauses the stages that ask for it.
          this.modelFault(e, who, modelProbe);
          if (probe) this.circuit.failure(true);
          continue;
        }
        const whose = await this.whose(e, probe, who, signal);
        if (whose === 'record') {
          // The endpoint answered, and refused this input alone: it is up, and takes the config.
          this.clearFault();
          this.clearModel(who);
          throw e;
        }
        if (whose === 'endpoint') {
          // A probe that failed some other way than the fault suspected still hands on the probe.
          if (probe) this.circuit.trip(true);
          continue;
        }
        const down = this.circuit.failure(probe);
        // Failures while the endpoint is down are the endpoint's, not this request's: they never
        // use up its attempts, so an outage delays calls and drops none.
        if (!down && ++counted >= this.opts.retry.maxAttempts)
          throw new AttemptsExhausted(e as TransientError);
        const delay = down
          ? ((e as TransientError).retryAfterMs ?? 0)
          : backoffMs(counted, this.opts.retry, (e as TransientError).retryAfterMs);
        this.hooks.onRetry((e as TransientError).reason, delay);
        if (delay > 0) await this.clock.sleep(delay);
        continue;
      }
      this.inFlight--;
      this.hooks.onRequest?.('answered');
      this.cutByArrivals = 0;
      permit.answered(this.clock.now() - sentAt);
      for (const t of tickets) t.leave(reply.tokens);
      this.watch.success();
      this.clearFault();
      this.clearModel(who);
      return { reply, attempts };
    }
  }

  /** By model: each has its own capacity on a server (its own weights, its own slots). */
  private readonly limits = new Map<string, AdaptiveLimit>();
  private stated?: Promise<number | undefined>;

  private async limitOf(model: string): Promise<AdaptiveLimit> {
    let limit = this.limits.get(model);
    if (limit) return limit;
    // Asked once, before the first request: a server that states its slots starts there.
    this.stated ??= (this.opts.statedCapacity?.() ?? Promise.resolve(undefined)).catch(() => undefined);
    const slots = await this.stated;
    limit = this.limits.get(model);
    if (limit) return limit;
    limit = new AdaptiveLimit(this.opts.limits.concurrency ?? Number.POSITIVE_INFINITY);
    const learned = this.opts.learned?.(model) ?? {};
    if (slots) limit.state(slots);
    else if (learned.concurrencyLimit) limit.resume(learned.concurrencyLimit);
    if (learned.interruptsStreams) limit.toOneAtATime();
    this.limits.set(model, limit);
    return limit;
  }

  /**
   * A stream cut while another request was in flight. Twice with no reply answered between, the server
   * is one that ends the stream in progress whenever another request arrives: llama-cpp-python
   * does by default (llama_cpp/server/app.py, get_event_publisher: with `interrupt_requests`, after
   * each chunk it sends `[DONE]` and stops if a request waits for the model's lock), so with more
   * than one request in flight only the last would ever finish. Sent one at a time, each finishes.
   * Servers with slots do not: llama-server (tools/server/server-queue.cpp,
   * server_response_reader::next and stop) polls its client's connection each second and cancels
   * the task of a client gone, while a new request waits for a free slot; vLLM
   * (vllm/entrypoints/utils.py, with_cancellation; a StreamingResponse listens itself) aborts the
   * request of a client that disconnected, while a new one is scheduled beside those running.
   * Once is not enough: a stream may also end early for its own reasons while others are sent.
   */
  private cutByArrival(limit: AdaptiveLimit, model: string): void {
    if (++this.cutByArrivals < CUTS_FOR_ONE_AT_A_TIME || limit.oneAtATime) return;
    limit.toOneAtATime();
    this.hooks.onOneAtATime?.(model);
  }

  /** Where each model's adaptive limit stands now. */
  concurrency(): ConcurrencyState[] {
    return [...this.limits].map(([model, l]) => ({
      endpoint: this.name,
      model,
      limit: l.current,
      inFlight: l.sending,
      bound: l.bound,
      stated: l.stated,
      oneAtATime: l.oneAtATime,
      queueingSeen: l.queueingSeen,
    }));
  }

  private modelFault(e: unknown, who: RequestIdentity, probe: boolean): void {
    let model = this.models.get(who.model);
    if (!model) {
      model = {
        gate: new Circuit(this.opts.circuit, this.clock, () => {}),
        fault: faultOf(e, who, this.name),
      };
      this.models.set(who.model, model);
      this.hooks.onFault?.(model.fault);
    }
    model.gate.trip(probe);
  }

  private clearModel(who: RequestIdentity | undefined): void {
    const model = who && this.models.get(who.model);
    if (!model) return;
    this.models.delete(who.model);
    model.gate.success();
    this.hooks.onFault?.(null);
  }

  private clearFault(): void {
    const cleared = this.fault;
    this.fault = null;
    this.circuit.success();
    if (cleared?.confirmed) this.hooks.onFault?.(null);
  }

  /**
   * Whose a failure is (faults.ts): 'record' (the caller fails), 'endpoint' (the circuit is tripped;
   * the caller waits and tries again), or 'transient' (retried as before).
   */
  private async whose(
    e: unknown,
    probe: boolean,
    who: RequestIdentity | undefined,
    signal: AbortSignal | undefined,
  ): Promise<'record' | 'endpoint' | 'transient'> {
    const alone = whoseAlone(e);
    if (alone === 'record') return 'record';
    const key = who?.key ?? String(Math.random());
    const identity = who ?? { key, stage: 'llm', model: '', stageModel: false };
    // A probe that fails the way the suspected fault did confirms it.
    if (this.fault && probe && this.watch.same(e)) {
      this.confirm(probe);
      return 'endpoint';
    }
    if (alone === 'endpoint') {
      this.watch.repeated(e, key);
      this.fault ??= { fault: faultOf(e, identity, this.name), confirmed: false };
      this.confirm(probe);
      return 'endpoint';
    }
    if (alone === 'transient') {
      // Only some can be the endpoint's (faults.ts); an outage's failures (timeouts, 503s) break the run.
      if (!endpointIfRepeated(e)) {
        this.watch.other();
        return 'transient';
      }
      if (!this.watch.repeated(e, key, REPEATS_FOR_REFUSAL)) return 'transient';
      this.suspect(e, identity, probe);
      return 'endpoint';
    }
    // A suspect: this input's, unless every input fails alike.
    if (this.watch.repeated(e, key)) {
      this.suspect(e, identity, probe);
      return 'endpoint';
    }
    if (this.fault) return 'endpoint';
    // No evidence within a probe interval (nothing else sent): the input's own, as before.
    const verdict = await this.watch.verdict(this.clock, this.opts.circuit.probeIntervalMs, signal);
    if (signal?.aborted) throw signal.reason;
    return verdict;
  }

  /** Pauses the endpoint for a fault seen repeated; the next probe confirms it. */
  private suspect(e: unknown, who: RequestIdentity, probe: boolean): void {
    if (!this.fault) this.fault = { fault: faultOf(e, who, this.name), confirmed: false };
    this.circuit.trip(probe);
  }

  private confirm(probe: boolean): void {
    const f = this.fault!;
    this.circuit.trip(probe);
    if (f.confirmed) return;
    f.confirmed = true;
    this.hooks.onFault?.(f.fault);
  }
}

/** Streams cut with another request in flight before the server is taken to end one whenever another arrives. */
const CUTS_FOR_ONE_AT_A_TIME = 2;

/** A 404 naming the model: the endpoint is there, this model is not. */
function unknownModel(e: unknown): boolean {
  return statusOf(e) === 404 && /model/i.test(serverMessage(e));
}

/** A timeout, a 429 or a 503: the server has more than it can take, whatever else it is. */
function overloaded(e: unknown): boolean {
  if (e instanceof TransientError && e.reason === 'timeout') return true;
  const status = statusOf(e);
  return status === 429 || status === 503;
}

/** What a failed request is counted as in the run summary. */
function outcomeOf(e: unknown): string {
  const status = statusOf(e);
  if (status !== undefined) return `http ${status}`;
  if (e instanceof TransientError) return e.reason;
  return 'failed';
}
