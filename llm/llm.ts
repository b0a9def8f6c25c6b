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
import { EndpointMemory } from './endpoint-memory.js';
import {
  LlmContextError,
  LlmRefusalError,
  LlmReplyError,
  LlmRequestError,
  LlmStoppedError,
} from './errors.js';
import { callSignal } from './flow/call-signal.js';
import { AttemptsExhausted, type ConcurrencyState } from './flow/endpoint.js';
import type { EndpointFault } from './flow/faults.js';
import type { ResponseJournal } from './journal/journal.js';
import { MemoryJournal } from './journal/memory.js';
import { replyJsonSchema } from './json-schema.js';
import { requestKey } from './key.js';
import { LlmMetrics } from './metrics.js';
import { STAGE_GRAMMARS } from './providers/local-grammars.js';
import { CONTEXT_EXCEEDED } from './providers/openai.js';
import { checkReply, cutOffThinking, repairMessages, splitThinking } from './reply.js';
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
  /**
   * What is learned of each endpoint (refused fields, context, thinking budget, concurrency), and
   * where it is kept: `run` keeps it with the data folder. Default: this layer's life only.
   */
  memory?: EndpointMemory;
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
  /**
   * By endpoint and model, what was learned of it (EndpointMemory): the budget a reply cut off
   * while thinking last needed, where the next request starts (how long a model thinks is the
   * model's more than the stage's); the context a server's overflow 400 named, where none is
   * declared.
   */
  private readonly memory: EndpointMemory;
  private readonly contextsLogged = new Set<string>();
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
    this.memory = options.memory ?? EndpointMemory.inMemory();
    this.budget = new Budget(config.budget, this.clock, (paused, why) => {
      this.metrics.budgetPaused.set(paused ? 1 : 0);
      if (paused) this.log.warn(`LLM calls paused: the daily budget is spent (${why}); raise it to resume`);
      else this.log.info('LLM calls resumed: budget available');
    });
    this.targets = new Targets(
      config,
      this.memory,
      this.clock,
      (endpoint) => ({
        onRetry: (reason) => this.metrics.retries.inc({ endpoint, reason }),
        onRequest: (outcome) => this.requests.set(outcome, (this.requests.get(outcome) ?? 0) + 1),
        onOneAtATime: (model) => {
          this.memory.learn(endpoint, model, { interruptsStreams: true });
          this.log.warn(
            { endpoint, model },
            'LLM endpoint ends the reply it is streaming whenever another request arrives (llama-cpp-python does by default: interrupt_requests): sending it one request at a time from now on; `bioalchemy llm forget` forgets this after the server changes',
          );
        },
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
              `LLM endpoint refuses every ${fault.stage} request: fix ${fault.configKey}: ${fault.fix}. The server said: ${fault.message.replace(/\.$/, '')}. Calls wait (nothing is dead-lettered) while one probe is tried periodically`,
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
      (endpoint, model, change, refusal) =>
        this.log.warn(
          { endpoint, model, refusal },
          `LLM endpoint refused a parameter sent by choice: ${change} from now on for this model`,
        ),
    );
    this.metrics.budgetUsdPerDay.set(config.budget.usdPerDay ?? 0);
    this.metrics.watchConcurrency(() => this.targets.concurrency());
  }

  /**
   * Resolves with the reply validated against `schema`. An invalid reply gets one repair request;
   * rejects with LlmReplyError when that fails too, LlmRequestError when the endpoint refuses.
   */
  async complete<S extends z.ZodType>(request: CompletionRequest<S>): Promise<Completion<z.output<S>>> {
    const target = this.targets.get(request.stage);
    const schema = { name: request.stage, schema: replyJsonSchema(request.schema) };
    const spent: Answered[] = [];
    const ask = async (messages: LlmMessage[], repair: boolean) => {
      const answered = await this.answer(target, request, messages, schema, repair, spent);
      if (answered.reply.refusal) {
        this.count(request.stage, target, 'refused');
        throw new LlmRefusalError(request.stage, answered.reply.refusal, answered.callId);
      }
      return answered;
    };

    const first = await ask(request.messages, false);
    let checked = checkReply(first.reply, request.schema);
    let last = first;
    if (!checked.ok) {
      this.count(request.stage, target, 'invalid');
      // The answer, not the thinking: the model is asked to fix what it answered.
      const answer = splitThinking(first.reply.content).answer;
      last = await ask(repairMessages(request.messages, answer, checked.reason), true);
      checked = checkReply(last.reply, request.schema);
      if (!checked.ok) {
        this.count(request.stage, target, 'invalid');
        throw new LlmReplyError(request.stage, last.reply.content, checked.reason, last.callId);
      }
    }
    this.count(request.stage, target, last === first ? 'ok' : 'repaired');
    return {
      value: checked.value,
      usage: {
        inputTokens: spent.reduce((n, a) => n + a.reply.usage.inputTokens, 0),
        outputTokens: spent.reduce((n, a) => n + a.reply.usage.outputTokens, 0),
      },
      cached: spent.every((a) => a.cached),
      model: last.reply.model,
      latencyMs: spent.reduce((n, a) => n + a.latencyMs, 0),
      callId: last.callId,
    };
  }

  /**
   * One reply to `messages` with the budget it needs: a reply cut off while the model was still
   * thinking is asked again with eight times the budget (a budget is a bound, not a price: too much
   * costs nothing, too little a wasted reply), up to maxTokensCap and what the context
   * leaves; one still thinking there is no reply (no repair: a repair would think as long). The
   * budget is fitted to a declared context first; a prompt that leaves too little is refused unsent.
   * Every request made is added to `spent`.
   */
  private async answer(
    target: Target,
    request: CompletionRequest<z.ZodType>,
    messages: LlmMessage[],
    schema: { name: string; schema: Record<string, unknown> },
    repair: boolean,
    spent: Answered[],
  ): Promise<Answered> {
    const { stage } = request;
    const wanted = request.params?.maxTokens ?? target.maxTokens;
    const prompt = promptTokens(messages);
    const served = `${target.endpoint.name}\u0000${target.model}`;
    const known = this.memory.get(target.endpoint.name, target.model);
    // Declared, or as the server said in an overflow it answered before.
    let context = target.contextTokens ?? known.contextTokens;
    const least = Math.min(wanted, MIN_REPLY_TOKENS);
    if (context !== undefined && context - prompt < least)
      throw new LlmContextError(
        stage,
        `the prompt is about ${prompt} tokens, leaving ${Math.max(0, context - prompt)} of the ${context}-token context (${target.contextTokens ? 'contextTokens' : 'as the server said'}) for a reply that needs at least ${least}`,
      );
    let cap = Math.min(
      Math.max(target.maxTokensCap, wanted),
      context === undefined ? Infinity : context - prompt,
    );
    let budget = Math.min(Math.max(wanted, known.thinkingBudget ?? 0), cap);
    for (;;) {
      let answered: Answered;
      try {
        answered = await this.request(target, request, messages, schema, repair, budget);
      } catch (e) {
        // Undeclared, the server's overflow names its context ("This model's maximum context length
        // is 2048 tokens"): the budget is fitted to it and the request sent again, once; what still
        // does not fit is the dead letter, in the server's words.
        const said =
          e instanceof LlmContextError && context === undefined ? serverContext(e.message) : undefined;
        if (said === undefined) throw e;
        this.memory.learn(target.endpoint.name, target.model, { contextTokens: said });
        if (!this.contextsLogged.has(served)) {
          this.contextsLogged.add(served);
          this.log.warn(
            { endpoint: target.endpoint.name, model: target.model, contextTokens: said },
            `LLM endpoint's context is ${said} tokens (its 400 said so): budgets fitted to it; declare llm.contextTokens to skip the refused request`,
          );
        }
        if (said - prompt < least) throw e;
        context = said;
        cap = Math.min(cap, said - prompt);
        budget = Math.min(budget, cap);
        continue;
      }
      spent.push(answered);
      if (!cutOffThinking(answered.reply)) {
        const before = this.memory.get(target.endpoint.name, target.model).thinkingBudget ?? 0;
        if (budget > wanted && budget > before)
          this.memory.learn(target.endpoint.name, target.model, { thinkingBudget: budget });
        return answered;
      }
      this.count(stage, target, 'thinking-cut-off');
      if (budget >= cap) {
        const why = `the reply was cut off at ${budget} tokens while the model was still thinking`;
        if (context !== undefined && cap === context - prompt)
          throw new LlmContextError(stage, `${why}: the ${context}-token context leaves no more`);
        throw new LlmReplyError(
          stage,
          answered.reply.content,
          `${why} (maxTokensCap ${target.maxTokensCap})`,
          answered.callId,
        );
      }
      budget = Math.min(budget * 8, cap);
    }
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

  /**
   * The signal stop() aborts. Calls tie their own signals to it, one listener each while in flight
   * (flow/call-signal.ts): what it holds is the calls in flight, never the calls made.
   */
  get stopSignal(): AbortSignal {
    return this.stopping.signal;
  }

  /** Where each endpoint's adaptive concurrency limit stands, by model (flow/adaptive-limit.ts). */
  concurrency(): ConcurrencyState[] {
    return this.targets.concurrency();
  }

  /** The confirmed endpoint faults pausing calls now (see onFault). */
  faults(): EndpointFault[] {
    return this.targets.faults();
  }

  async close(): Promise<void> {
    this.stop();
    // The limits found (not stated by the server, which says them again): the next run starts there.
    for (const c of this.targets.concurrency())
      if (c.stated === undefined) this.memory.learn(c.endpoint, c.model, { concurrencyLimit: c.limit });
    await this.targets.close();
    await this.memory.written();
  }

  /** One model request: from the journal if it was made before, else sent and journaled at once. */
  private async request(
    target: Target,
    request: CompletionRequest<z.ZodType>,
    messages: LlmMessage[],
    schema: { name: string; schema: Record<string, unknown> },
    repair: boolean,
    maxTokens: number,
  ): Promise<Answered> {
    const { stage } = request;
    const params = {
      temperature:
        request.params?.temperature !== undefined ? request.params.temperature : target.temperature,
      maxTokens,
    };
    const key = requestKey({
      provider: target.provider,
      model: target.model,
      promptVersion: request.promptVersion,
      // The local model's reply also depends on the grammar a stage has of its own.
      params: {
        ...params,
        schema,
        // Only when set, so that the keys of requests made before there were any stay the same.
        ...(Object.keys(target.fields).length > 0 ? { fields: target.fields } : {}),
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
        ...(reply.reasoningTokens ? { reasoningTokens: reply.reasoningTokens } : {}),
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
    params: { temperature: number | null; maxTokens: number },
    key: string,
  ): Promise<{ reply: LlmJournalReply; attempts: number }> {
    await this.budget.admit();
    this.metrics.inFlight.inc({ stage });
    const estimate = Math.ceil(messages.reduce((n, m) => n + m.content.length, 0) / 4) + params.maxTokens;
    let sent: { reply: { reply: LlmJournalReply; tokens: number }; attempts: number };
    const call = callSignal(this.stopping.signal);
    const signal = call.signal;
    const who = { key, stage, model: target.model, stageModel: target.stageModel };
    try {
      if (signal.aborted) throw signal.reason;
      sent = await target.endpoint.send(
        target.throttle,
        estimate,
        async (started) => {
          const reply = await target.backend.chat({
            signal,
            started,
            model: target.model,
            messages,
            schema,
            ...params,
            fields: target.fields,
            timeoutMs: target.timeoutMs,
            ...(target.stream ? { stream: target.stream } : {}),
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
      const status = (e as { status?: number }).status;
      // The server says this prompt and budget do not fit its context: this input's fault, in its words.
      if ((status === 400 || status === 413 || status === 422) && CONTEXT_EXCEEDED.test((e as Error).message))
        throw new LlmContextError(stage, (e as Error).message);
      throw new LlmRequestError(stage, (e as Error).message, status);
    } finally {
      call.release();
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
      // Of the output, what the model spent thinking: what turning thinking off would save.
      if (r.reasoningTokens)
        this.metrics.tokens.inc({ ...labels, direction: 'reasoning' }, r.reasoningTokens);
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

  private count(
    stage: LlmStage,
    target: Target,
    outcome: 'ok' | 'repaired' | 'invalid' | 'failed' | 'refused' | 'thinking-cut-off',
  ): void {
    this.metrics.calls.inc({ stage, model: target.model, outcome });
  }
}

/** The context a server's overflow message names (vLLM's and OpenAI's wording), if it does. */
export function serverContext(message: string): number | undefined {
  const n = Number(/maximum context length is (\d+)/i.exec(message)?.[1]);
  return n > 0 ? n : undefined;
}

/** The least budget worth a request: a stage's reply is a few hundred tokens of JSON. */
const MIN_REPLY_TOKENS = 256;

/**
 * A prompt's tokens, over- rather than under-estimated (3 characters a token, where English prose is
 * about 4, plus each message's framing): a budget fitted to it must not overflow the context.
 */
export function promptTokens(messages: readonly LlmMessage[]): number {
  return messages.reduce((n, m) => n + Math.ceil(m.content.length / 3) + 8, 0);
}

/**
 * The signal stop() aborts. Each call in flight ties its own signal to it by one listener
 * (flow/call-signal.ts), so it holds as many as there are calls in flight (hundreds at once): no
 * listener limit, no warning.
 */
function stoppingController(): AbortController {
  const c = new AbortController();
  setMaxListeners(0, c.signal);
  return c;
}
