import OpenAI from 'openai';
import { Stream } from 'openai/core/streaming';
import type { Dialect, LlmJournalReply } from '../../schemas/llm.js';
import { CutReplyError, TransientError, UnreadableReplyError } from '../errors.js';
import { parseJson } from '../journal/log.js';
import { splitThinking } from '../reply.js';
import { type HttpFetch, httpFetch, isEventStreamType } from './http-fetch.js';
import { EndpointProgress, ProgressWatch } from './progress.js';
import type { Provider, ProviderRequest } from './provider.js';

const DEFAULT_DIALECT: Dialect = {
  temperature: true,
  maxTokens: true,
  maxCompletionTokens: true,
  responseFormat: 'json_schema',
  streamOptions: true,
  stringLengths: true,
};

/** A server that has a capacity endpoint answers it at once; one that has none may be slow to say so. */
const STATED_CAPACITY_TIMEOUT_MS = 5_000;

/** The message of a server saying the prompt and the reply's budget do not fit its context. */
export const CONTEXT_EXCEEDED =
  /context length|context window|context size|maximum context|exceeds? (?:the )?(?:model'?s? )?(?:max(?:imum)? )?(?:context|n_ctx)|n_ctx/i;

/** How servers word a refused field or keyword. */
const REFUSED = /input should be|not supported|unsupported|invalid|unrecognized|not permitted|extra/i;

/**
 * The dialect that answers a refusal of the request, or undefined when the refusal is not about a
 * field this layer sends by choice. The field is the error's `param` or the first of them its
 * message names (OpenAI's "Unsupported parameter: 'max_tokens' ... Use 'max_completion_tokens'
 * instead" names the refused one first).
 */
export function relearn(
  dialect: Dialect,
  message: string,
  param: string | null | undefined,
): { dialect: Dialect; change: string } | undefined {
  if (CONTEXT_EXCEEDED.test(message)) return undefined;
  // Before response_format's own refusal: a schema keyword refused is the keyword's, not the format's.
  if (dialect.stringLengths && /\b(?:maxLength|minLength)\b/.test(message) && REFUSED.test(message))
    return {
      dialect: { ...dialect, stringLengths: false },
      change: 'string lengths refused in the reply schema: sending it without maxLength and minLength',
    };
  if (
    dialect.responseFormat === 'json_schema' &&
    /'text' or 'json_object'|response_format|json_schema/i.test(message) &&
    REFUSED.test(message)
  )
    return {
      dialect: { ...dialect, responseFormat: 'json_object' },
      change: 'response_format json_schema refused: sending {type: "json_object", schema}',
    };
  if (
    !/unsupported|not supported|unrecognized|not permitted|extra (?:inputs|fields)|unknown|does not support/i.test(
      message,
    )
  )
    return undefined;
  if (dialect.streamOptions && (param === 'stream_options' || /\bstream_options\b/.test(message)))
    return {
      dialect: { ...dialect, streamOptions: false },
      change: 'stream_options refused: streaming without it, the usage estimated',
    };
  const fields = ['temperature', 'max_completion_tokens', 'max_tokens'] as const;
  const named =
    fields.find((f) => f === param) ??
    fields
      .map((f) => ({ f, at: message.search(new RegExp(`\\b${f}\\b`)) }))
      .filter((x) => x.at >= 0)
      .sort((a, b) => a.at - b.at)[0]?.f;
  if (named === 'temperature' && dialect.temperature)
    return { dialect: { ...dialect, temperature: false }, change: 'temperature refused: leaving it unset' };
  // One bound always stays: a reply with none runs to the end of the context.
  if (named === 'max_tokens' && dialect.maxTokens && dialect.maxCompletionTokens)
    return {
      dialect: { ...dialect, maxTokens: false },
      change: 'max_tokens refused: sending max_completion_tokens only',
    };
  if (named === 'max_completion_tokens' && dialect.maxCompletionTokens && dialect.maxTokens)
    return {
      dialect: { ...dialect, maxCompletionTokens: false },
      change: 'max_completion_tokens refused: sending max_tokens only',
    };
  return undefined;
}

/** The reply's message as servers extend it: vLLM's reasoning_content, OpenRouter's (and newer vLLM's) reasoning. */
type ServerMessage = OpenAI.Chat.Completions.ChatCompletionMessage & {
  reasoning_content?: string | null;
  reasoning?: string | null;
};

/** A streamed chunk's delta as the same servers extend it. */
type ServerDelta = OpenAI.Chat.Completions.ChatCompletionChunk.Choice.Delta & {
  reasoning_content?: string | null;
  reasoning?: string | null;
};

/** The reply as the journal keeps it, from a whole reply or the pieces of a streamed one. */
function journalReply(r: {
  content: string;
  reasoning: string;
  refusal: string;
  model: string;
  finish: string | null | undefined;
  usage: OpenAI.Completions.CompletionUsage | undefined;
}): LlmJournalReply {
  const outputTokens = r.usage?.completion_tokens ?? 0;
  const reasoningTokens =
    r.usage?.completion_tokens_details?.reasoning_tokens ??
    // vLLM counts reasoning in completion_tokens without saying how much: estimated from its text.
    Math.min(
      outputTokens || Number.POSITIVE_INFINITY,
      Math.ceil((r.reasoning.length + splitThinking(r.content).thinking.length) / 4),
    );
  return {
    content: r.content,
    model: r.model,
    usage: { inputTokens: r.usage?.prompt_tokens ?? 0, outputTokens },
    truncated: r.finish === 'length',
    ...(reasoningTokens > 0 ? { reasoningTokens } : {}),
    ...(r.refusal ? { refusal: r.refusal } : {}),
  };
}

/**
 * A server-sent events terminator glued after a whole JSON body (`{...}\n\ndata: [DONE]`), as
 * 9router sends where it passes a provider's whole reply on with the end of a stream.
 */
const GLUED_DONE = /\s*data:\s*\[DONE\]\s*$/;

/**
 * A whole reply's body: one chat completion as JSON (labelled so or not, an SSE terminator after it
 * or not). What is none (an HTML page, a cut body, JSON without `choices`) is an UnreadableReplyError.
 */
function wholeReply(body: string, contentType: string): LlmJournalReply {
  const parsed = (parseJson(body) ?? parseJson(body.replace(GLUED_DONE, ''))) as
    | Partial<OpenAI.Chat.Completions.ChatCompletion>
    | undefined;
  const choice = Array.isArray(parsed?.choices) ? parsed.choices[0] : undefined;
  if (!choice || typeof choice.message !== 'object' || choice.message === null)
    throw new UnreadableReplyError(contentType, body);
  const message = choice.message as ServerMessage;
  return journalReply({
    content: message.content ?? '',
    reasoning: message.reasoning_content ?? message.reasoning ?? '',
    refusal: message.refusal ?? '',
    model: parsed!.model ?? '',
    finish: choice.finish_reason,
    usage: parsed!.usage,
  });
}

export interface OpenAiProviderOptions {
  /** Told once per endpoint and model each time the request is resent in another dialect. */
  onDialect?: (model: string, change: string, refusal: string) => void;
  /** Where each model's dialect is kept beyond this provider (EndpointMemory): read first, written on a change. */
  dialects?: { get(model: string): Partial<Dialect> | undefined; set(model: string, dialect: Dialect): void };
}

/** An OpenAI-compatible chat completions endpoint, through the `openai` client. */
export class OpenAiProvider implements Provider {
  private readonly client: OpenAI;
  private readonly http: HttpFetch = httpFetch();
  /** Chunks from any of this endpoint's streams: a request queued behind them is not stalled. */
  private readonly progress = new EndpointProgress();
  /** By model: a dialect is the endpoint's and the model's (one server can serve several). */
  private readonly dialects = new Map<string, Dialect>();

  private dialectOf(model: string): Dialect {
    let dialect = this.dialects.get(model);
    if (!dialect) {
      // Learned by an earlier run, over the defaults (a field added since is at its default).
      dialect = { ...DEFAULT_DIALECT, ...this.options.dialects?.get(model) };
      this.dialects.set(model, dialect);
    }
    return dialect;
  }

  constructor(
    private readonly baseUrl: string | undefined,
    private readonly apiKey: string,
    private readonly options: OpenAiProviderOptions = {},
  ) {
    // maxRetries 0: the client's own retries would hide failures from the circuit and the accounting.
    // Requests go over pooled node:http connections, not the built-in fetch: about half the CPU.
    this.client = new OpenAI({
      baseURL: baseUrl,
      apiKey,
      maxRetries: 0,
      fetch: errorBodiesNested(this.http.fetch),
    });
  }

  async chat(request: ProviderRequest): Promise<LlmJournalReply> {
    // Each refusal teaches one field; there are five to learn, so a sixth refusal is the request's.
    for (let tries = 0; ; tries++) {
      const dialect = this.dialectOf(request.model);
      try {
        return await this.once(request, dialect);
      } catch (e) {
        const refused =
          e instanceof OpenAI.APIError && e.status !== undefined && [400, 422, 500].includes(e.status)
            ? relearn(dialect, e.message, e.param)
            : undefined;
        if (refused && tries < 5) {
          // Requests in flight together are refused together: the first to learn tells, once.
          if (this.dialectOf(request.model) === dialect) {
            this.dialects.set(request.model, refused.dialect);
            this.options.dialects?.set(request.model, refused.dialect);
            this.options.onDialect?.(request.model, refused.change, String(withoutSecret(e, this.apiKey)));
          }
          continue;
        }
        // Endpoints quote the key they were sent in their error bodies ("Incorrect API key provided:
        // sk-…"); what is thrown becomes log lines and dead-letter reasons, so the key leaves it here.
        throw withoutSecret(transient(e) ?? e, this.apiKey);
      }
    }
  }

  /**
   * One request, its body read by what the server sent (its Content-Type), not by what was asked:
   * servers answer one JSON body to a streamed request and events to a whole one (the router
   * 9router converts either way for its clients because its providers do both:
   * open-sse/handlers/chatCore/jsonToSseHandler.js and sseToJsonHandler.js). Under a
   * ProgressWatch either way: a streamed request's timeouts measure its progress (a long reply
   * that keeps coming is never timed out, one that does not start or stops is); a whole one has
   * its whole-reply bound alone, which events still bound where the server streams anyway.
   */
  private async once(request: ProviderRequest, dialect: Dialect): Promise<LlmJournalReply> {
    const timeoutMs = request.timeoutMs;
    const watch = new ProgressWatch(
      { firstChunkMs: timeoutMs, stallMs: timeoutMs, ...request.stream, totalMs: timeoutMs },
      this.progress,
      request.signal,
    );
    try {
      const response = await this.client.chat.completions
        .create(
          {
            ...body(request, dialect),
            ...(request.stream
              ? {
                  stream: true,
                  ...(dialect.streamOptions ? { stream_options: { include_usage: true } } : {}),
                }
              : {}),
          } as unknown as OpenAI.Chat.Completions.ChatCompletionCreateParams,
          // The watch's signal gives the request up (a timeout, the process stopping: the reply is
          // then not paid); the client's own timer, at the same bound, never ends it sooner.
          { signal: watch.signal, timeout: timeoutMs },
        )
        .asResponse();
      const contentType = response.headers.get('content-type') ?? '';
      if (isEventStreamType(contentType)) return await this.events(response, request, watch);
      return wholeReply(await response.text(), contentType);
    } catch (e) {
      throw watch.expired ?? e;
    } finally {
      watch.done();
    }
  }

  /**
   * A reply as server-sent events, read as they arrive. It is complete when a chunk says how it
   * finished (finish_reason): a stream that ends without one, by its `[DONE]` or the end of its
   * body, was cut, and is no reply. llama-cpp-python's server ends the stream in progress that
   * way whenever another request waits for its model (llama_cpp/server/app.py,
   * get_event_publisher: with `interrupt_requests`, True by default in settings.py, after each
   * chunk it sends `[DONE]` if `llama_outer_lock` is held by a request waiting its turn). Without
   * the usage chunk (a server that ignores stream_options), tokens are estimated: the prompt's
   * characters / 4, and a token per chunk (llama.cpp and vLLM send one token per event by default).
   */
  private async events(
    response: Response,
    request: ProviderRequest,
    watch: ProgressWatch,
  ): Promise<LlmJournalReply> {
    const text = { content: '', reasoning: '', refusal: '' };
    let model = request.model;
    let finish: string | null | undefined;
    let usage: OpenAI.Completions.CompletionUsage | undefined;
    let chunks = 0;
    let began = false;
    const stream = Stream.fromSSEResponse<OpenAI.Chat.Completions.ChatCompletionChunk>(
      response,
      new AbortController(),
      this.client,
    );
    try {
      for await (const chunk of stream) {
        watch.progressed();
        if (!began) {
          began = true;
          request.started?.();
        }
        if (chunk.model) model = chunk.model;
        if (chunk.usage) usage = chunk.usage;
        const choice = chunk.choices?.[0];
        if (!choice) continue;
        const delta = choice.delta as ServerDelta;
        const piece = delta.content ?? delta.reasoning_content ?? delta.reasoning ?? delta.refusal;
        if (piece) chunks++;
        text.content += delta.content ?? '';
        text.reasoning += delta.reasoning_content ?? delta.reasoning ?? '';
        text.refusal += delta.refusal ?? '';
        if (choice.finish_reason) finish = choice.finish_reason;
      }
    } catch (e) {
      // An error event (the server's words), or this request given up: as they are.
      if (e instanceof OpenAI.APIError || watch.signal.aborted) throw e;
      if (e instanceof SyntaxError)
        throw new UnreadableReplyError(response.headers.get('content-type') ?? '', e.message);
      // The body broke off (the connection reset, the server gone): sent again, as a failed connection.
      throw new TransientError('connection', `the reply's stream broke off: ${(e as Error).message}`);
    }
    if (!finish) {
      // Given up meanwhile (the openai client ends its iteration quietly on an abort): a timeout or the stop.
      if (watch.signal.aborted) throw watch.expired ?? watch.signal.reason;
      throw new CutReplyError(chunks);
    }
    return journalReply({
      ...text,
      model,
      finish,
      usage: usage ?? {
        prompt_tokens: Math.ceil(JSON.stringify(request.messages).length / 4),
        completion_tokens: chunks,
        total_tokens: 0,
      },
    });
  }

  /**
   * What the server says of its capacity, where it says: llama-server's `GET /props` names its
   * decoding slots (`total_slots`), TGI's `GET /info` the requests it admits at once
   * (`max_concurrent_requests`). Both sit beside `/v1`, at the server's root. Others (vLLM,
   * llama-cpp-python, OpenAI) answer 404 or something else: then nothing is stated.
   */
  async statedCapacity(): Promise<number | undefined> {
    if (!this.baseUrl) return undefined;
    const root = this.baseUrl.replace(/\/v1\/?$/, '');
    for (const [path, field] of [
      ['/props', 'total_slots'],
      ['/info', 'max_concurrent_requests'],
    ] as const) {
      try {
        const response = await this.http.fetch(`${root}${path}`, {
          headers: { authorization: `Bearer ${this.apiKey}` },
          signal: AbortSignal.timeout(STATED_CAPACITY_TIMEOUT_MS),
        });
        if (!response.ok) continue;
        const n = Number(((await response.json()) as Record<string, unknown>)[field]);
        if (Number.isInteger(n) && n > 0) return n;
      } catch {
        // Not this server's endpoint (a page, no JSON) or no answer: nothing stated there.
      }
    }
    return undefined;
  }

  async close(): Promise<void> {
    this.http.close();
  }
}

/** The request body in a dialect; server-specific fields first, so nothing the request owns is overridden. */
function body(request: ProviderRequest, dialect: Dialect): Record<string, unknown> {
  const { name } = request.schema;
  const schema = dialect.stringLengths ? request.schema.schema : withoutStringLengths(request.schema.schema);
  return {
    ...request.fields,
    model: request.model,
    messages: request.messages,
    ...(dialect.temperature && request.temperature !== null ? { temperature: request.temperature } : {}),
    ...(dialect.maxCompletionTokens ? { max_completion_tokens: request.maxTokens } : {}),
    ...(dialect.maxTokens ? { max_tokens: request.maxTokens } : {}),
    response_format:
      dialect.responseFormat === 'json_schema'
        ? { type: 'json_schema', json_schema: { name, schema, strict: true } }
        : { type: 'json_object', schema },
  };
}

const stripped = new WeakMap<Record<string, unknown>, Record<string, unknown>>();

/** A JSON Schema without `maxLength` and `minLength`, at any depth (Dialect.stringLengths); once per schema. */
function withoutStringLengths(schema: Record<string, unknown>): Record<string, unknown> {
  const known = stripped.get(schema);
  if (known) return known;
  const strip = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(strip)
      : value && typeof value === 'object'
        ? Object.fromEntries(
            Object.entries(value)
              .filter(([k]) => k !== 'maxLength' && k !== 'minLength')
              .map(([k, v]) => [k, strip(v)]),
          )
        : value;
  const result = strip(schema) as Record<string, unknown>;
  stripped.set(schema, result);
  return result;
}

/**
 * Error bodies as the openai client reads them, `{error: {message}}`: older vLLM answers
 * `{object: "error", message, type, param, code}` at the top level and some servers `{error: "..."}`,
 * which the client reports as "400 status code (no body)" or a quoted string.
 */
function errorBodiesNested(inner: typeof fetch): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const response = await inner(input, init);
    if (response.status < 400) return response;
    const text = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {}
    const o =
      json && typeof json === 'object' && !Array.isArray(json)
        ? (json as Record<string, unknown>)
        : undefined;
    const nested =
      o && o.error === undefined && typeof o.message === 'string'
        ? { error: o }
        : o && typeof o.error === 'string'
          ? { ...o, error: { message: o.error } }
          : undefined;
    const headers = new Headers(response.headers);
    headers.delete('content-length');
    return new Response(nested ? JSON.stringify(nested) : text, {
      status: response.status,
      statusText: response.statusText,
      headers,
    });
  }) as typeof fetch;
}

/** The error with every occurrence of the secret in its message, stack and body replaced. */
export function withoutSecret(e: unknown, secret: string): unknown {
  if (!(e instanceof Error) || secret.length < 4) return e;
  const clean = (s: string) => s.split(secret).join('[redacted]');
  if (e.message.includes(secret)) e.message = clean(e.message);
  if (e.stack?.includes(secret)) e.stack = clean(e.stack);
  const body = e as Error & { error?: unknown };
  if (body.error !== undefined && JSON.stringify(body.error)?.includes(secret))
    body.error = JSON.parse(clean(JSON.stringify(body.error)));
  return e;
}

function transient(e: unknown): TransientError | undefined {
  if (e instanceof OpenAI.APIConnectionTimeoutError) return new TransientError('timeout', e.message);
  if (e instanceof OpenAI.APIConnectionError) return new TransientError('connection', e.message);
  if (!(e instanceof OpenAI.APIError) || e.status === undefined) return undefined;
  if (e.status === 429) return new TransientError('rate-limit', e.message, retryAfterMs(e.headers), 429);
  if (e.status >= 500 || e.status === 408 || e.status === 409) {
    return new TransientError(
      e.status === 408 ? 'timeout' : 'server-error',
      e.message,
      retryAfterMs(e.headers),
      e.status,
    );
  }
  return undefined;
}

/** Retry-After in seconds or as an HTTP date, or OpenAI's retry-after-ms. */
function retryAfterMs(headers: Headers | undefined): number | undefined {
  const ms = Number(headers?.get('retry-after-ms'));
  if (ms > 0) return ms;
  const value = headers?.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
