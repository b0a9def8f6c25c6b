import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { type Logger, pino } from 'pino';
import { Registry } from 'prom-client';
import type { z } from 'zod';
import type {
  LlmBudget,
  LlmCallRecord,
  LlmConfig,
  LlmJournalReply,
  LlmMessage,
  LlmStage,
  LlmStageConfig,
  LlmUsage,
} from '../schemas/llm.js';
import { Budget } from './budget.js';
import { type Clock, systemClock } from './clock.js';
import { LlmReplyError, LlmRequestError, LlmStoppedError } from './errors.js';
import { AttemptsExhausted } from './flow/endpoint.js';
import type { EndpointFault } from './flow/faults.js';
import type { ResponseJournal } from './journal/journal.js';
import { MemoryJournal } from './journal/memory.js';
import { replyJsonSchema } from './json-schema.js';
import { requestKey } from './key.js';
import { LlmMetrics } from './metrics.js';
import { STAGE_GRAMMARS } from './providers/local-grammars.js';
import { checkReply, repairMessages } from './reply.js';
import { type Target, Targets } from './targets.js';

export interface CompletionRequest<S extends z.ZodType> {
  stage: LlmStage;
  messages: LlmMessage[];
  /** The reply's shape: sent as JSON Schema, and every reply is validated against it. */
  schema: S;
  /** Change it whenever the prompt's wording changes: journaled replies to other wordings are not reused. */
  promptVersion: string;
  params?: Pick<LlmStageConfig, 'temperature' | 'maxTokens'>;
}

export interface Completion<T> {
  value: T;
  /** Over the request and its repair, if one was needed; journal hits included. */
  usage: LlmUsage;
  /** Every reply came from the response journal: nothing was paid. */
  cached: boolean;
  model: string;
  latencyMs: number;
  /** The call whose reply is `value` (the repair's, when there was one). */
  callId: string;
}

export interface LlmOptions {
  /** Where the layer's metrics go; usually the process's registry. */
  registry?: Registry;
  log?: Logger;
  /** Defaults to memory: replies then survive only as long as the process. */
  journal?: ResponseJournal;
  /** Every model request as accounted, journal hits included (for ClickHouse). */
  onCall?: (record: LlmCallRecord) => void;
  clock?: Clock;
  /** Where the API key variable is read; process.env by default. */
  env?: NodeJS.ProcessEnv;
  /**
   * An endpoint fault confirmed (llm/flow/faults.ts: auth, an unknown model, a request refused for
   * every input), or null once it clears. Its calls wait meanwhile; nothing fails for it.
   */
  onFault?: (fault: EndpointFault | null) => void;
}

interface Answered {
  reply: LlmJournalReply;
  callId: string;
  cached: boolean;
  latencyMs: number;
}

/**
 * The one way the pipeline talks to a model: a typed, validated reply per request, with flow
 * control, retries, the response journal, accounting and the spend cap behind it.
 */
export class Llm {
  readonly metrics: LlmMetrics;
  private readonly log: Logger;
  private readonly journal: ResponseJournal;
  private readonly onCall: (record: LlmCallRecord) => void;
  private readonly clock: Clock;
  private readonly budget: Budget;
  private readonly targets: Targets;
  /** Requests sent and not yet answered, by request key. */
  private readonly sending = new Map<string, Promise<{ reply: LlmJournalReply; attempts: number }>>();
  /** Aborted by stop(): every call waiting or in flight gives up with LlmStoppedError. */
  private readonly stopping = stoppingController();
  /** Requests sent to an endpoint, by outcome ("answered", "http 500", "timeout", "aborted", ...). */
  readonly requests = new Map<string, number>();

  constructor(config: LlmConfig, options: LlmOptions = {}) {
    this.metrics = new LlmMetrics(options.registry ?? new Registry());
    this.log = options.log ?? pino({ name: 'llm' });
    this.journal = options.journal ?? new MemoryJournal();
    this.onCall = options.onCall ?? (() => {});
    this.clock = options.clock ?? systemClock;
    this.budget = new Budget(config.budget, this.clock, (paused, why) => {
      this.metrics.budgetPaused.set(paused ? 1 : 0);
      if (paused) this.log.warn(`LLM calls paused: the daily budget is spent (${why}); raise it to resume`);
      else this.log.info('LLM calls resumed: budget available');
    });
    this.targets = new Targets(
      config,
      this.clock,
      (endpoint) => ({
        onRetry: (reason) => this.metrics.retries.inc({ endpoint, reason }),
        onRequest: (outcome) => this.requests.set(outcome, (this.requests.get(outcome) ?? 0) + 1),
        onFault: (fault) => {
          // The one error a confirmed fault logs (its calls wait; the run's caller decides to stop).
          if (fault)
            this.log.error(
              {
                endpoint: fault.endpoint,
                stage: fault.stage,
                status: fault.status,
                configKey: fault.configKey,
              },
              `LLM endpoint refuses every request: fix ${fault.configKey}: ${fault.fix}. The server said: ${fault.message.replace(/\.$/, '')}. Calls wait (nothing is dead-lettered) while one probe is tried periodically`,
            );
          else this.log.info({ endpoint }, 'LLM endpoint accepts requests again: calls resume');
          options.onFault?.(fault);
        },
        onDown: (down, byFault) => {
          this.metrics.endpointDown.set({ endpoint }, down ? 1 : 0);
          // A fault is logged as itself (onFault), not as an outage.
          if (byFault) return;
          if (down)
            this.log.warn(
              { endpoint },
              'LLM endpoint down: calls wait while one probe is tried periodically',
            );
          else this.log.info({ endpoint }, 'LLM endpoint answering again: calls resume');
        },
      }),
      options.env ?? process.env,
    );
    this.metrics.budgetUsdPerDay.set(config.budget.usdPerDay ?? 0);
  }

  /**
   * Resolves with the reply validated against `schema`. An invalid reply gets one repair request;
   * rejects with LlmReplyError when that fails too, LlmRequestError when the endpoint refuses.
   */
  async complete<S extends z.ZodType>(request: CompletionRequest<S>): Promise<Completion<z.output<S>>> {
    const target = this.targets.get(request.stage);
    const schema = { name: request.stage, schema: replyJsonSchema(request.schema) };
    const ask = (messages: LlmMessage[], repair: boolean) =>
      this.request(target, request, messages, schema, repair);

    const first = await ask(request.messages, false);
    let checked = checkReply(first.reply, request.schema);
    let last = first;
    if (!checked.ok) {
      this.count(request.stage, target, 'invalid');
      last = await ask(repairMessages(request.messages, first.reply.content, checked.reason), true);
      checked = checkReply(last.reply, request.schema);
      if (!checked.ok) {
        this.count(request.stage, target, 'invalid');
        throw new LlmReplyError(request.stage, last.reply.content, checked.reason, last.callId);
      }
    }
    this.count(request.stage, target, last === first ? 'ok' : 'repaired');
    const both = last === first ? [first] : [first, last];
    return {
      value: checked.value,
      usage: {
        inputTokens: both.reduce((n, a) => n + a.reply.usage.inputTokens, 0),
        outputTokens: both.reduce((n, a) => n + a.reply.usage.outputTokens, 0),
      },
      cached: both.every((a) => a.cached),
      model: last.reply.model,
      latencyMs: both.reduce((n, a) => n + a.latencyMs, 0),
      callId: last.callId,
    };
  }

  /** Replaces the daily cap; calls waiting on the old one go ahead if the new one allows. */
  setBudget(budget: LlmBudget): void {
    this.budget.set(budget);
    this.metrics.budgetUsdPerDay.set(budget.usdPerDay ?? 0);
  }

  /**
   * Gives up every call waiting or in flight (the process is stopping): each rejects with
   * LlmStoppedError at once, and the requests in flight are aborted. Replies already journaled stay.
   */
  stop(): void {
    this.stopping.abort(new Error('stopping'));
  }

  /** The confirmed endpoint faults pausing calls now (see onFault). */
  faults(): EndpointFault[] {
    return this.targets.faults();
  }

  async close(): Promise<void> {
    this.stop();
    await this.targets.close();
  }

  /** One model request: from the journal if it was made before, else sent and journaled at once. */
  private async request(
    target: Target,
    request: CompletionRequest<z.ZodType>,
    messages: LlmMessage[],
    schema: { name: string; schema: Record<string, unknown> },
    repair: boolean,
  ): Promise<Answered> {
    const { stage } = request;
    const params = {
      temperature: request.params?.temperature ?? target.temperature,
      maxTokens: request.params?.maxTokens ?? target.maxTokens,
    };
    const key = requestKey({
      provider: target.provider,
      model: target.model,
      promptVersion: request.promptVersion,
      // The local model's reply also depends on the grammar a stage has of its own.
      params: {
        ...params,
        schema,
        ...(target.provider === 'local' && STAGE_GRAMMARS[schema.name]
          ? { grammar: STAGE_GRAMMARS[schema.name] }
          : {}),
      },
      messages,
    });
    const callId = randomUUID();
    const started = performance.now();
    const record = (reply: LlmJournalReply, cached: boolean, attempts: number): Answered => {
      const latencyMs = performance.now() - started;
      const { inputTokens, outputTokens } = reply.usage;
      const costUsd = cached
        ? 0
        : (inputTokens * target.inputUsdPerMillion + outputTokens * target.outputUsdPerMillion) / 1e6;
      this.account({
        callId,
        requestKey: key,
        stage,
        provider: target.provider,
        model: reply.model,
        inputTokens,
        outputTokens,
        latencyMs,
        costUsd,
        cached,
        attempts,
        repair,
        at: Date.now(),
      });
      return { reply, callId, cached, latencyMs };
    };

    const journaled = await this.journal.get(key);
    if (journaled) return record(journaled, true, 0);
    // The same request already on its way (two passages with one text, say): wait for its reply
    // instead of paying for it twice.
    const pending = this.sending.get(key);
    if (pending) {
      const { reply } = await pending;
      // This input used the reply too, so its step settles it as well (a journal hit settles): the
      // reply leaves the journal even if the asker's step never commits (fenced, say).
      await this.journal.get(key);
      return record(reply, true, 0);
    }
    const sending = this.send(target, stage, messages, schema, params, key);
    this.sending.set(key, sending);
    try {
      const sent = await sending;
      return record(sent.reply, false, sent.attempts);
    } finally {
      this.sending.delete(key);
    }
  }

  /** Sends one request under flow control and journals its reply the moment it arrives. */
  private async send(
    target: Target,
    stage: LlmStage,
    messages: LlmMessage[],
    schema: { name: string; schema: Record<string, unknown> },
    params: { temperature: number; maxTokens: number },
    key: string,
  ): Promise<{ reply: LlmJournalReply; attempts: number }> {
    await this.budget.admit();
    this.metrics.inFlight.inc({ stage });
    const estimate = Math.ceil(messages.reduce((n, m) => n + m.content.length, 0) / 4) + params.maxTokens;
    let sent: { reply: { reply: LlmJournalReply; tokens: number }; attempts: number };
    const signal = this.stopping.signal;
    const who = { key, stage, model: target.model, stageModel: target.stageModel };
    try {
      if (signal.aborted) throw signal.reason;
      sent = await target.endpoint.send(
        target.throttle,
        estimate,
        async () => {
          const reply = await target.backend.chat({
            signal,
            model: target.model,
            messages,
            schema,
            ...params,
            timeoutMs: target.timeoutMs,
          });
          // Journaled before anything else happens to it, and before its slot is given back: the
          // journal writes a turn's replies together, and a kill -9 pays again for no more replies
          // than the endpoint lets be in flight. (A failed write is no transient error: not retried.)
          await this.journal.put(key, reply);
          return { reply, tokens: reply.usage.inputTokens + reply.usage.outputTokens };
        },
        who,
        signal,
      );
    } catch (e) {
      this.metrics.inFlight.dec({ stage });
      // Stopping: nobody's fault, and no failed call either; the input is read again at the next start.
      if (signal.aborted) throw new LlmStoppedError(stage);
      this.count(stage, target, 'failed');
      if (e instanceof AttemptsExhausted) {
        throw new LlmRequestError(stage, `gave up after repeated ${e.last.reason} failures: ${e.message}`);
      }
      throw new LlmRequestError(stage, (e as Error).message, (e as { status?: number }).status);
    }
    this.metrics.inFlight.dec({ stage });
    return { reply: sent.reply.reply, attempts: sent.attempts };
  }

  private account(r: LlmCallRecord): void {
    const labels = { stage: r.stage, model: r.model };
    if (r.cached) {
      this.metrics.journalHits.inc({ stage: r.stage });
    } else {
      this.budget.spend(r.inputTokens + r.outputTokens, r.costUsd);
      this.metrics.spentTodayUsd.set(this.budget.spentUsd());
      this.metrics.tokens.inc({ ...labels, direction: 'input' }, r.inputTokens);
      this.metrics.tokens.inc({ ...labels, direction: 'output' }, r.outputTokens);
      this.metrics.cost.inc(labels, r.costUsd);
      this.metrics.latency.observe(labels, r.latencyMs / 1000);
    }
    try {
      this.onCall(r);
    } catch (e) {
      // Accounting must not turn a paid, journaled reply into a failure.
      this.log.error({ err: e }, 'LLM onCall callback threw');
    }
  }

  private count(stage: LlmStage, target: Target, outcome: 'ok' | 'repaired' | 'invalid' | 'failed'): void {
    this.metrics.calls.inc({ stage, model: target.model, outcome });
  }
}

/** One signal every call listens to (hundreds at once): no listener limit, no warning. */
function stoppingController(): AbortController {
  const c = new AbortController();
  setMaxListeners(0, c.signal);
  return c;
}
