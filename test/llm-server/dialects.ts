import { z } from 'zod';
import { seededFrom } from './random.js';
import type { ChatRequest } from './request.js';

/**
 * How the server speaks: the request fields it takes and refuses, how the model's thinking comes
 * back, its context, its refusals and its error bodies. Each part follows a real server's own
 * documentation or source, cited where it is used below; the presets (DIALECTS) put them together
 * as those servers answer. Everything off is the plain OpenAI-compatible server the tests had.
 */
export const Dialect = z
  .object({
    /** The model thinks this many tokens (±20%, drawn from the prompt) before its answer. */
    reasoning: z
      .object({
        tokens: z.number().int().positive(),
        /**
         * Where the thinking goes: vLLM's `reasoning_content` (vLLM 0.7-0.10 with --reasoning-parser),
         * `reasoning` (vLLM 0.11+, OpenRouter), `inline` in the content in <think> tags (llama-server
         * --reasoning-format none, vLLM without a parser), or `hidden` (OpenAI's o-series and gpt-5:
         * counted in usage, never returned).
         */
        field: z.enum(['reasoning_content', 'reasoning', 'inline', 'hidden']),
      })
      .strict()
      .optional(),
    /** Share of prompts (drawn from the prompt, so a retry gets the same) the model refuses. */
    refusalRate: z.number().min(0).max(1).default(0),
    /** The model's context: a request whose prompt and budget exceed it is a 400, as vLLM's --max-model-len. */
    contextTokens: z.number().int().positive().optional(),
    /** OpenAI reasoning models: any temperature but 1 is a 400, and so is `max_tokens`. */
    openaiReasoningParams: z.boolean().default(false),
    /** Refuses `max_completion_tokens` as an unknown argument (OpenAI-compatible servers before it existed). */
    refusesMaxCompletionTokens: z.boolean().default(false),
    /** Reads only `max_tokens` (Ollama, llama-cpp-python): `max_completion_tokens` bounds nothing. */
    ignoresMaxCompletionTokens: z.boolean().default(false),
    /** llama-cpp-python's response_format: `text` or `json_object` (with `schema`), else a 500. */
    llamaCppResponseFormat: z.boolean().default(false),
    /** Structured outputs' strict mode: a string's `maxLength` or `minLength` in the schema is a 400. */
    refusesStringLengths: z.boolean().default(false),
    /** Error bodies at the top level, `{object: "error", message, ...}`, as vLLM's before 0.9. */
    topLevelErrors: z.boolean().default(false),
    /**
     * A streamed reply carries no usage, whatever `stream_options` asks: llama-cpp-python 0.3
     * has no such field (llama_cpp/server/types.py, CreateChatCompletionRequest) and ignores it.
     */
    streamsNoUsage: z.boolean().default(false),
    /**
     * llama-cpp-python's `interrupt_requests` (llama_cpp/server/settings.py, True by default): its
     * model sits behind a lock, and get_event_publisher (llama_cpp/server/app.py), after each chunk
     * it sends, sends `data: [DONE]` and stops when another request holds `llama_outer_lock`, which
     * a request waiting for the model does (get_llama_proxy): the stream in progress ends with no
     * finish_reason on any chunk, and the waiting request takes the model. Here: when a request
     * waits for a slot (the server's `slots`: 1 for llama-cpp-python). A whole reply is not cut.
     */
    interruptsStreams: z.boolean().default(false),
    /**
     * How the body is framed, whatever the request asked (`stream`): `as-asked` (OpenAI: events to a
     * streamed request, one JSON body to a whole one); `json`, one JSON body always (a provider that
     * does not stream: 9router converts such a body for a client that asked for a stream, because
     * providers send one, open-sse/handlers/chatCore/jsonToSseHandler.js); `events` always (a
     * provider that always streams, which 9router's sseToJsonHandler.js converts for a whole
     * request); `json-then-done`, one JSON body labelled application/json with the end of a stream,
     * `data: [DONE]`, glued after it, as seen from 9router.
     */
    framing: z.enum(['as-asked', 'json', 'events', 'json-then-done']).default('as-asked'),
  })
  .strict();
export type Dialect = z.infer<typeof Dialect>;

/** llama-cpp-python 0.3's server, as DIALECTS['llama-cpp-python'] describes it. */
const LLAMA_CPP_PYTHON = {
  llamaCppResponseFormat: true,
  ignoresMaxCompletionTokens: true,
  streamsNoUsage: true,
} as const;

export const DIALECTS = {
  plain: {},
  // Qwen3 on vLLM with --reasoning-parser qwen3: thinking is on by default and comes back in
  // message.reasoning_content; `max_tokens` bounds thinking and answer together, so a reply cut off
  // while thinking has content null and finish_reason "length".
  // https://docs.vllm.ai/en/v0.10.0/features/reasoning_outputs.html
  'vllm-reasoning': { reasoning: { tokens: 1500, field: 'reasoning_content' } },
  // The same on vLLM 0.11+ ("reasoning used to be called reasoning_content"), a long thinker.
  // https://docs.vllm.ai/en/v0.11.2/features/reasoning_outputs/
  'vllm-reasoning-long': { reasoning: { tokens: 6000, field: 'reasoning' } },
  // llama-server with --reasoning-format none leaves the thinking in the content, in <think> tags
  // (llama.cpp tools/server/README.md, --reasoning-format); so does vLLM without a reasoning parser.
  'inline-think': { reasoning: { tokens: 1500, field: 'inline' } },
  // OpenAI o-series and gpt-5: "reasoning tokens ... count against max_completion_tokens" and are
  // billed as output (usage.completion_tokens_details.reasoning_tokens), never returned; a budget
  // spent on them ends with finish_reason "length" and empty content. Such a model refuses
  // temperature other than 1 ("Unsupported value: 'temperature' does not support 0.2 with this
  // model. Only the default (1) value is supported.") and max_tokens ("Unsupported parameter:
  // 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.").
  // https://platform.openai.com/docs/guides/reasoning#allocating-space-for-reasoning
  'openai-reasoning': { reasoning: { tokens: 1500, field: 'hidden' }, openaiReasoningParams: true },
  // Structured outputs may refuse: message.refusal holds the words and content is null.
  // https://platform.openai.com/docs/guides/structured-outputs#refusals
  refusal: { refusalRate: 0.1 },
  // vLLM --max-model-len 2048: prompt tokens plus max_tokens over it is a 400, with the error body
  // at the top level as vLLM's ErrorResponse was before 0.9 (vllm/entrypoints/openai/protocol.py:
  // ErrorResponse {object: "error", message, type, param, code}).
  'context-2048': { contextTokens: 2048, topLevelErrors: true },
  // llama-cpp-python 0.3's server: response_format is ChatCompletionRequestResponseFormat, type
  // Literal["text", "json_object"] with an optional `schema` (llama_cpp/server/types.py; its
  // examples send {"type": "json_object", "schema": {...}}); json_schema fails the request's
  // validation inside the handler, a 500. It reads max_tokens, not max_completion_tokens.
  // Its streams end with the finish_reason and no usage chunk (seen from the 0.3.36 server deploy/llama-cpp-python.sh builds).
  'llama-cpp-python': LLAMA_CPP_PYTHON,
  // OpenAI's structured outputs (strict json_schema): "Supported properties" for strings are
  // `pattern` and `format`, no lengths (platform.openai.com/docs/guides/structured-outputs); a schema
  // with one is refused with a 400 naming the keyword and where it is, param "response_format".
  'openai-structured': { refusesStringLengths: true },
  // llama-cpp-python's server as it runs by default: a request arriving ends the stream in
  // progress (interruptsStreams above); start the test server with `slots: 1`, as it serves one.
  interrupt: { ...LLAMA_CPP_PYTHON, interruptsStreams: true },
  // The framings servers answer with whatever was asked (framing above).
  'answers-json': { framing: 'json' },
  'answers-events': { framing: 'events' },
  'json-then-done': { framing: 'json-then-done' },
  // Ollama's OpenAI endpoint lists max_tokens, not max_completion_tokens, among what it supports
  // (docs/openai.md, /v1/chat/completions).
  ollama: { ignoresMaxCompletionTokens: true },
  // An OpenAI-compatible server from before max_completion_tokens.
  'old-openai-compatible': { refusesMaxCompletionTokens: true },
} satisfies Record<string, z.input<typeof Dialect>>;
export type DialectName = keyof typeof DIALECTS;

/** What the server does with one request: an error, or the reply's message, finish and usage. */
export type Outcome =
  | { kind: 'error'; status: number; body: unknown }
  | {
      kind: 'reply';
      message: Record<string, unknown>;
      finish: 'stop' | 'length';
      completionTokens: number;
      reasoningTokens: number;
      /** The request set no bound the server honours (a reply could run to the end of the context). */
      unbounded: boolean;
    };

const tokensOf = (text: string) => Math.ceil(text.length / 4);

/** An error body in the dialect's shape. */
function error(
  d: Dialect,
  status: number,
  message: string,
  param: string | null,
  code: string | null,
): Outcome {
  const inner = { message, type: 'invalid_request_error', param, code };
  return {
    kind: 'error',
    status,
    body: d.topLevelErrors ? { object: 'error', ...inner, code: status } : { error: inner },
  };
}

/** The request as the dialect refuses it, if it does. */
export function refusal(d: Dialect, request: ChatRequest, promptTokens: number): Outcome | undefined {
  const r = request as ChatRequest & Record<string, unknown>;
  if (d.openaiReasoningParams && r.temperature !== undefined && r.temperature !== 1)
    return error(
      d,
      400,
      `Unsupported value: 'temperature' does not support ${String(r.temperature)} with this model. Only the default (1) value is supported.`,
      'temperature',
      'unsupported_value',
    );
  if (d.openaiReasoningParams && r.max_tokens !== undefined)
    return error(
      d,
      400,
      "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
      'max_tokens',
      'unsupported_parameter',
    );
  if (d.refusesMaxCompletionTokens && r.max_completion_tokens !== undefined)
    return error(d, 400, 'Unrecognized request argument supplied: max_completion_tokens', null, null);
  if (
    d.llamaCppResponseFormat &&
    request.response_format &&
    !['text', 'json_object'].includes(request.response_format.type)
  )
    // llama-cpp-python answers a request its pydantic model refuses inside the handler with a 500
    // carrying the validation errors.
    return {
      kind: 'error',
      status: 500,
      body: {
        error: {
          message: `[{'type': 'literal_error', 'loc': ('response_format', 'type'), 'msg': "Input should be 'text' or 'json_object'", 'input': '${request.response_format.type}'}]`,
          type: 'internal_server_error',
        },
      },
    };
  const lengthAt = d.refusesStringLengths ? stringLengthPath(request.response_format) : undefined;
  if (lengthAt)
    return error(
      d,
      400,
      `Invalid schema for response_format 'reply': In context=(${lengthAt.path.map((p) => `'${p}'`).join(', ')}), '${lengthAt.keyword}' is not permitted.`,
      'response_format',
      null,
    );
  const budget = bound(d, request);
  if (d.contextTokens !== undefined && promptTokens + (budget ?? 0) > d.contextTokens)
    return error(
      d,
      400,
      `This model's maximum context length is ${d.contextTokens} tokens. However, you requested ${promptTokens + (budget ?? 0)} tokens (${promptTokens} in the messages, ${budget ?? 0} in the completion). Please reduce the length of the messages or completion.`,
      null,
      null,
    );
  return undefined;
}

/** Where the request's reply schema first sets a string length, if it does. */
function stringLengthPath(format: unknown): { path: string[]; keyword: string } | undefined {
  const schema = (format as { json_schema?: { schema?: unknown } } | undefined)?.json_schema?.schema;
  const find = (value: unknown, path: string[]): { path: string[]; keyword: string } | undefined => {
    if (!value || typeof value !== 'object') return undefined;
    for (const keyword of ['maxLength', 'minLength']) if (keyword in value) return { path, keyword };
    for (const [k, v] of Object.entries(value)) {
      const found = find(v, [...path, k]);
      if (found) return found;
    }
    return undefined;
  };
  return find(schema, []);
}

/** The reply's budget as the dialect reads the request; undefined: none. */
function bound(d: Dialect, request: ChatRequest): number | undefined {
  const r = request as ChatRequest & Record<string, unknown>;
  const completion = typeof r.max_completion_tokens === 'number' ? r.max_completion_tokens : undefined;
  const tokens = typeof r.max_tokens === 'number' ? r.max_tokens : undefined;
  // vLLM and OpenAI: max_completion_tokens first (vllm protocol.py: `max_completion_tokens or max_tokens`).
  return d.ignoresMaxCompletionTokens ? tokens : (completion ?? tokens);
}

/** The model's thinking of about `tokens` tokens, in words. */
function thinkingText(tokens: number): string {
  const line = 'Let me read the passage again and check what the schema asks for. ';
  return line.repeat(Math.ceil((tokens * 4) / line.length)).slice(0, tokens * 4);
}

/**
 * The reply to an accepted request whose answer is `answer`: the dialect's thinking before it, a
 * refusal instead of it, both cut off at the budget the dialect reads.
 */
export function reply(d: Dialect, request: ChatRequest, answer: string, promptHash: string): Outcome {
  const random = seededFrom(`dialect ${promptHash}`);
  const budget = bound(d, request);
  const unbounded = budget === undefined;
  const limit = budget ?? Number.POSITIVE_INFINITY;
  if (d.refusalRate > 0 && random() < d.refusalRate) {
    const words = "I'm sorry, but I can't help with that request.";
    return {
      kind: 'reply',
      message: { role: 'assistant', content: null, refusal: words },
      finish: 'stop',
      completionTokens: tokensOf(words),
      reasoningTokens: 0,
      unbounded,
    };
  }
  // Qwen3's chat template on vLLM: chat_template_kwargs {enable_thinking: false} turns thinking off
  // (https://docs.vllm.ai/en/v0.10.0/features/reasoning_outputs.html, the note under the models).
  const off =
    (request as { chat_template_kwargs?: { enable_thinking?: unknown } }).chat_template_kwargs
      ?.enable_thinking === false;
  const drawn = 0.8 + 0.4 * random();
  const thinking = d.reasoning && !off ? Math.round(d.reasoning.tokens * drawn) : 0;
  const thought = Math.min(thinking, limit);
  const answerTokens = tokensOf(answer);
  const cut = thought + answerTokens > limit;
  const content = thought < thinking ? null : answer.slice(0, (limit - thought) * 4);
  const completionTokens = Math.min(limit, thinking + answerTokens);
  const message: Record<string, unknown> = { role: 'assistant', content, refusal: null };
  const text = thinkingText(thought);
  switch (d.reasoning?.field) {
    case 'reasoning_content':
    case 'reasoning':
      if (thought > 0) message[d.reasoning.field] = text;
      break;
    case 'inline':
      // Cut off while thinking: the tag never closes.
      message.content = content === null ? `<think>\n${text}` : `<think>\n${text}\n</think>\n\n${content}`;
      break;
    case 'hidden':
      message.content = content ?? '';
      break;
  }
  return {
    kind: 'reply',
    message,
    finish: cut ? 'length' : 'stop',
    completionTokens,
    reasoningTokens: thought,
    unbounded,
  };
}

/**
 * The request as the responders read it: llama-cpp-python's `{type: "json_object", schema}` gains
 * the `json_schema` the responders read, named for the stage its schema is (the dialect sends no
 * name); its type stays as sent.
 */
export function normalized(request: ChatRequest): ChatRequest {
  const format = request.response_format as
    | (ChatRequest['response_format'] & { schema?: unknown })
    | undefined;
  if (format?.type !== 'json_object' || !format.schema || typeof format.schema !== 'object') return request;
  const schema = format.schema as Record<string, unknown>;
  return { ...request, response_format: { ...format, json_schema: { name: stageOf(schema), schema } } };
}

/** The stage whose reply schema this is, by its properties. */
function stageOf(schema: Record<string, unknown>): string {
  const text = JSON.stringify(schema);
  const has = (p: string) => text.includes(`"${p}"`);
  if (has('relevant')) return 'relevance';
  if (has('labels')) return 'classify';
  if (has('quality') && has('verdict')) return 'mcq-quality';
  if (has('questions')) return has('options') ? 'mcq' : 'freeform';
  return 'unknown';
}
