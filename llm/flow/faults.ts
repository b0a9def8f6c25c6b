import type { Clock } from '../clock.js';
import { CutReplyError, TransientError, UnreadableReplyError } from '../errors.js';

/**
 * Whose fault a failed request is: the one place the LLM layer decides it (Kafka Streams' rule: a
 * dependency's fault fails the task and commits nothing; only the record's own fault is skipped).
 *
 * | what the endpoint answered                                   | whose      | what happens                                   | config key to fix          |
 * | ------------------------------------------------------------ | ---------- | ---------------------------------------------- | -------------------------- |
 * | 401, 403                                                     | endpoint   | stage paused at once, probed                   | llm.apiKeyEnv              |
 * | 404 naming a model ("The model `x` does not exist.")         | endpoint   | stage paused at once, probed                   | llm.model / stages.S.model |
 * | 404 otherwise (no such route)                                | endpoint   | stage paused at once, probed                   | llm.baseUrl                |
 * | 400/413/422 saying the context or prompt is too long         | record     | dead letter with the server's message          | -                          |
 * | any other 4xx (a parameter, a schema, a content rule)        | suspect    | waits: another input answered -> record; the   | by what the message names  |
 * |                                                              |            | same message for 3 distinct inputs -> endpoint |                            |
 * | 500/501, the same message for 5 distinct inputs, no success  | endpoint   | a refusal of the request shape, not an outage  | llm.baseUrl (see llm check)|
 * | 200 with a body that is no chat completion, the same         | endpoint   | retried until then; the server (or a proxy in  | llm.baseUrl                |
 * | Content-Type for 5 distinct inputs, no success               |            | front of it) answers something else            |                            |
 * | a stream cut (no finish_reason) with no other request in     | endpoint   | retried until then; a server that never says   | llm.stream                 |
 * | flight, for 5 distinct inputs, no success                    |            | a reply is complete                            |                            |
 * | 429, 408, 409, 502-504, other 5xx, timeouts, connections     | transient  | retried; the circuit pauses a down endpoint    | -                          |
 * | anything thrown that is no HTTP answer (a bug, a bad reply)  | record     | dead letter                                    | -                          |
 *
 * A suspected endpoint fault (from repeats) pauses the stage and is confirmed by the next probe
 * failing the same way; a certain one (401/403/404) is confirmed at once. Only a confirmed fault is
 * reported (the one error `run` logs; `run --until-idle` then stops non-zero). A stream cut while
 * another request was in flight is no fault at all: the server may end the stream in progress
 * when another request arrives (endpoint.ts learns it as one at a time).
 */
export type Whose = 'record' | 'endpoint' | 'suspect' | 'transient';

/** An endpoint fault as `run` and `llm check` report it. */
export interface EndpointFault {
  endpoint: string;
  stage: string;
  status: number | undefined;
  /** The server's own words. */
  message: string;
  /** The config key to fix. */
  configKey: string;
  /** What to do, in a sentence. */
  fix: string;
}

/** What a request was: whose inputs, which stage and model (for the key to fix). */
export interface RequestIdentity {
  /** The request key: one per distinct input. */
  key: string;
  stage: string;
  model: string;
  /** Whether the stage sets its own model (llm.stages.<stage>.model). */
  stageModel: boolean;
}

/** How many distinct inputs must fail the same way, with no success between, to make it the endpoint's. */
export const REPEATS_FOR_ENDPOINT = 3;
/**
 * The same for a 500: more, as a flaky server's 500s are common and look alike ("internal error");
 * five in a row from five inputs, with nothing answered between, is a refusal, not bad luck.
 */
export const REPEATS_FOR_REFUSAL = 5;

const CONTEXT_TOO_LONG =
  /context.?(length|window|size)|maximum context|n_ctx|too many tokens|prompt is too long|too long|exceeds? the (max|limit)|input.{0,20}too large/i;

/** The HTTP status a provider's error carries (the openai client's APIError has `status`). */
export function statusOf(e: unknown): number | undefined {
  if (e instanceof TransientError) return e.status;
  const s = (e as { status?: unknown } | null)?.status;
  return typeof s === 'number' ? s : undefined;
}

/** The server's message without the client's "404 " prefix. */
export function serverMessage(e: unknown): string {
  const m = (e as Error)?.message ?? String(e);
  return m.replace(/^\d{3}\s+/, '');
}

/** The first verdict from one failure alone (the table above, without repeats). */
export function whoseAlone(e: unknown): Whose {
  const status = statusOf(e);
  if (e instanceof TransientError) return 'transient';
  if (status === undefined) return 'record';
  if (status === 401 || status === 403 || status === 404) return 'endpoint';
  const m = serverMessage(e);
  if (status === 413 || ((status === 400 || status === 422) && CONTEXT_TOO_LONG.test(m))) return 'record';
  if (status >= 400 && status < 500) return 'suspect';
  return 'transient';
}

/**
 * The transient failures that, repeated for REPEATS_FOR_REFUSAL distinct inputs with no success
 * between, are the endpoint's: a 500 or 501 (the server failed on this request shape), a body that
 * is no chat completion, a stream cut. An outage's failures (timeouts, 503s) never are.
 */
export function endpointIfRepeated(e: unknown): boolean {
  const status = statusOf(e);
  return status === 500 || status === 501 || e instanceof UnreadableReplyError || e instanceof CutReplyError;
}

/** The config key and the fix for an endpoint fault, from its status and message. */
export function faultOf(e: unknown, who: RequestIdentity, endpoint: string): EndpointFault {
  const status = statusOf(e);
  const message = serverMessage(e);
  const modelKey = who.stageModel ? `llm.stages.${who.stage}.model` : 'llm.model';
  const base = { endpoint, stage: who.stage, status, message };
  if (status === 401 || status === 403)
    return {
      ...base,
      configKey: 'llm.apiKeyEnv',
      fix: `the endpoint refuses the API key: set the environment variable llm.apiKeyEnv names to a key ${endpoint} accepts`,
    };
  if (status === 404 && /model/i.test(message))
    return {
      ...base,
      configKey: modelKey,
      fix: `the endpoint serves no model "${who.model}": set ${modelKey} to a model it serves (GET ${endpoint.replace(/\/$/, '')}/models lists them)`,
    };
  if (status === 404)
    return {
      ...base,
      configKey: 'llm.baseUrl',
      fix: `${endpoint} has no chat completions route: set llm.baseUrl to the server's OpenAI-compatible base (usually ending in /v1)`,
    };
  if (e instanceof UnreadableReplyError)
    return {
      ...base,
      configKey: 'llm.baseUrl',
      fix: `${endpoint} answers every request with a body that is no chat completion (neither JSON nor server-sent events of one): point llm.baseUrl at the server's OpenAI-compatible base, not a page or a proxy in front of it`,
    };
  if (e instanceof CutReplyError)
    return {
      ...base,
      configKey: 'llm.stream',
      fix: 'the endpoint ends every streamed reply without a finish_reason, so none is known complete: set llm.stream to false for whole replies',
    };
  const param = /\b(temperature|max_completion_tokens|max_tokens)\b/i.exec(message)?.[1];
  if (param) {
    const key = /temperature/i.test(param) ? 'temperature' : 'maxTokens';
    return {
      ...base,
      configKey: `llm.${key}`,
      fix: `the endpoint refuses ${param} for every input: change llm.${key} (or llm.stages.${who.stage}.${key})`,
    };
  }
  if (/response_format|json_schema|schema|grammar|structured/i.test(message))
    return {
      ...base,
      configKey: 'llm.baseUrl',
      fix: 'the endpoint refuses structured output (response_format json_schema) for every input: point llm.baseUrl at a server that supports it',
    };
  return {
    ...base,
    configKey: 'llm.baseUrl',
    fix: `the endpoint answers every input with the same error: check that llm.baseUrl (${endpoint}) and ${modelKey} serve this request (bioalchemy llm check)`,
  };
}

/**
 * A failure's identity for repeat counting: its status and message, numbers folded. An unreadable
 * body by its Content-Type (each body quoted differs), a cut by its kind (each says how far it got).
 */
function signatureOf(e: unknown): string {
  if (e instanceof UnreadableReplyError) return `unreadable ${e.contentType}`;
  if (e instanceof CutReplyError) return 'cut';
  return `${statusOf(e) ?? '-'} ${serverMessage(e).replace(/\d+/g, 'N')}`;
}

/**
 * The failures of one endpoint since its last success, by signature: how a fault that repeats for
 * every distinct input is told from one input's own. Waiting suspects are told the answer.
 */
export class FaultWatch {
  private signature: string | null = null;
  private readonly keys = new Set<string>();
  private readonly waiting = new Set<(verdict: 'record' | 'endpoint') => void>();

  /** The endpoint answered a request: whatever failed since was the failing inputs' own. */
  success(): void {
    this.signature = null;
    this.keys.clear();
    for (const tell of this.waiting) tell('record');
    this.waiting.clear();
  }

  /**
   * Counts a failure; says whether the same failure has now come from REPEATS_FOR_ENDPOINT
   * distinct inputs with no success and no other failure between.
   */
  repeated(e: unknown, key: string, needed = REPEATS_FOR_ENDPOINT): boolean {
    const signature = signatureOf(e);
    if (signature !== this.signature) {
      this.signature = signature;
      this.keys.clear();
    }
    this.keys.add(key);
    if (this.keys.size < needed) return false;
    for (const tell of this.waiting) tell('endpoint');
    this.waiting.clear();
    return true;
  }

  /** A failure of another kind (a timeout, a 503): failures since are no longer all alike. */
  other(): void {
    this.signature = null;
    this.keys.clear();
  }

  /** Whether `e` is the failure being counted now (a probe that fails the same way confirms it). */
  same(e: unknown): boolean {
    return signatureOf(e) === this.signature;
  }

  /**
   * Whose a suspect failure is, once known: the next success says 'record', repeats 'endpoint'.
   * With no evidence within `withinMs` it is 'record'; an aborted `signal` ends the wait early (the
   * caller checks it). Whichever way the wait ends, it leaves nothing behind: no waiter here, no
   * listener on `signal`, no timer, so a long-lived signal does not grow with the races lost.
   */
  async verdict(clock: Clock, withinMs: number, signal?: AbortSignal): Promise<'record' | 'endpoint'> {
    const done = new AbortController();
    const stop = () => done.abort();
    signal?.addEventListener('abort', stop, { once: true });
    let tell!: (verdict: 'record' | 'endpoint') => void;
    const told = new Promise<'record' | 'endpoint'>((resolve) => {
      tell = resolve;
      this.waiting.add(tell);
    });
    try {
      if (signal?.aborted) return 'record';
      return await Promise.race([told, clock.sleep(withinMs, done.signal).then(() => 'record' as const)]);
    } finally {
      done.abort();
      signal?.removeEventListener('abort', stop);
      this.waiting.delete(tell);
    }
  }
}
