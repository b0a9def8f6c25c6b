import { z } from 'zod';

/** The method's LLM stages, in pipeline order. */
// 'verify' is the reward's verifier (processors/reward-verifier.ts), asked only when reward.verifier is set.
export const LlmStage = z.enum([
  'relevance',
  'mcq',
  'mcq-quality',
  'freeform',
  'freeform-grade',
  'classify',
  'verify',
]);
export type LlmStage = z.infer<typeof LlmStage>;

export const LlmProvider = z.enum(['openai', 'local']);
export type LlmProvider = z.infer<typeof LlmProvider>;

const positiveInt = () => z.number().int().positive();

/**
 * What each request sets itself, so a configured field may not: the conversation and the reply's
 * shape belong to the stage, the model and the budget to their own keys, and the layer reads one
 * whole reply. Each with the key to use instead, where there is one.
 */
const OWNED_FIELDS: Record<string, string> = {
  messages: "the stage's prompt",
  response_format: "the stage's reply schema",
  model: 'set `model`',
  temperature: 'set `temperature` (null leaves it unsent)',
  max_tokens: 'set `maxTokens`',
  max_completion_tokens: 'set `maxTokens`',
  stream: 'the layer reads whole replies',
  n: 'the layer reads one choice',
};

/**
 * Fields sent as they are in every chat completions request: a server's own options (vLLM's
 * `chat_template_kwargs`, OpenAI's `reasoning_effort`, OpenRouter's `provider`). A field the
 * request owns is a config error naming its path.
 */
export const LlmRequestFields = z.record(z.string(), z.unknown()).superRefine((fields, ctx) => {
  for (const key of Object.keys(fields)) {
    const owner = OWNED_FIELDS[key];
    if (owner)
      ctx.addIssue({
        code: 'custom',
        path: [key],
        message: `${key} is not a request field to set: ${owner}`,
      });
  }
});
export type LlmRequestFields = z.infer<typeof LlmRequestFields>;

/** What a stage may set for itself; anything left out comes from the global `llm` block. */
export const LlmStageConfig = z
  .object({
    provider: LlmProvider.optional(),
    model: z.string().min(1).optional(),
    temperature: z.number().min(0).max(2).nullable().optional().describe('null: not sent'),
    maxTokens: positiveInt().optional().describe('most tokens a reply may have'),
    contextTokens: positiveInt().optional().describe("this stage's model's context, prompt and reply"),
    requestFields: LlmRequestFields.optional().describe(
      'sent in each request of this stage, over the global requestFields (shallow)',
    ),
    concurrency: positiveInt().optional().describe("this stage's calls in flight at once"),
    requestsPerMinute: z.number().positive().optional(),
    tokensPerMinute: z.number().positive().optional().describe('input + output tokens'),
    inputUsdPerMillion: z.number().nonnegative().optional().describe('price of a million input tokens'),
    outputUsdPerMillion: z.number().nonnegative().optional().describe('price of a million output tokens'),
  })
  .strict();
export type LlmStageConfig = z.infer<typeof LlmStageConfig>;

export const LlmBudget = z
  .object({
    tokensPerDay: positiveInt().optional().describe('input + output tokens per UTC day, over all stages'),
    usdPerDay: z.number().positive().optional().describe('spend per UTC day, from the configured prices'),
  })
  .strict();
export type LlmBudget = z.infer<typeof LlmBudget>;

export const LlmConfig = z
  .object({
    provider: LlmProvider.optional().describe('unset: openai when baseUrl is set, else the local model'),
    baseUrl: z
      .string()
      .url()
      .optional()
      .describe('OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1'),
    model: z.string().min(1).default('gpt-4o-mini').describe('model name sent to the openai endpoint'),
    apiKeyEnv: z
      .string()
      .min(1)
      .default('OPENAI_API_KEY')
      .describe('name of the environment variable with the key'),
    modelPath: z
      .string()
      .min(1)
      .default('./data/models/gemma-3-270m-q4_k_m.gguf')
      .describe('GGUF file of the local provider (deploy/model.sh writes the default)'),
    stream: z
      .boolean()
      .default(true)
      .describe(
        'ask for each reply as it is decoded (server-sent events), so that the timeouts measure progress; false: whole replies',
      ),
    firstTokenTimeoutMs: positiveInt()
      .default(120_000)
      .describe("streaming: from sent to the reply's first chunk (the server's queue and the prompt)"),
    stallTimeoutMs: positiveInt().default(30_000).describe('streaming: the longest silence between chunks'),
    timeoutMs: positiveInt()
      .default(600_000)
      .describe('one request, from sent to its whole reply: the bound above the streaming timeouts'),
    temperature: z
      .number()
      .min(0)
      .max(2)
      .nullable()
      .default(0)
      .describe("null: not sent, the model's default (OpenAI reasoning models take no other)"),
    maxTokens: positiveInt().default(1024).describe("a reply's budget, thinking included"),
    maxTokensCap: positiveInt()
      .default(32_768)
      .describe('the most a reply cut off while thinking is given when asked again'),
    contextTokens: positiveInt()
      .optional()
      .describe("the model's context (prompt and reply); unset: the server's 400 says when it is exceeded"),
    requestFields: LlmRequestFields.default({}).describe(
      'server-specific fields sent in every request, e.g. {"chat_template_kwargs": {"enable_thinking": false}}',
    ),
    concurrency: positiveInt().default(64).describe("the endpoint's calls in flight at once"),
    requestsPerMinute: z.number().positive().optional().describe("the endpoint's rate limit"),
    tokensPerMinute: z.number().positive().optional().describe("the endpoint's token rate limit"),
    inputUsdPerMillion: z.number().nonnegative().default(0),
    outputUsdPerMillion: z.number().nonnegative().default(0),
    retry: z
      .object({
        maxAttempts: positiveInt().default(5).describe('tries of one request while its endpoint is up'),
        baseDelayMs: positiveInt().default(500),
        maxDelayMs: positiveInt().default(30_000),
      })
      .strict()
      .default({ maxAttempts: 5, baseDelayMs: 500, maxDelayMs: 30_000 }),
    circuit: z
      .object({
        failureThreshold: positiveInt().default(8).describe('failures in a row that mark the endpoint down'),
        probeIntervalMs: positiveInt().default(5_000).describe('while down, one request is tried this often'),
      })
      .strict()
      .default({ failureThreshold: 8, probeIntervalMs: 5_000 }),
    budget: LlmBudget.default({}),
    stages: z.partialRecord(LlmStage, LlmStageConfig).default({}),
  })
  .strict();
export type LlmConfig = z.infer<typeof LlmConfig>;

export const LlmMessage = z
  .object({
    role: z.enum(['system', 'user', 'assistant']),
    content: z.string(),
  })
  .strict();
export type LlmMessage = z.infer<typeof LlmMessage>;

export const LlmUsage = z
  .object({
    inputTokens: z.number().int().nonnegative(),
    outputTokens: z.number().int().nonnegative(),
  })
  .strict();
export type LlmUsage = z.infer<typeof LlmUsage>;

/** One model reply as the response journal keeps it: enough to answer the same request again. */
export const LlmJournalReply = z
  .object({
    content: z.string(),
    model: z.string(),
    usage: LlmUsage,
    truncated: z.boolean().describe('the reply stopped at maxTokens'),
    reasoningTokens: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .describe("of outputTokens, the model's reasoning (reasoning_content, <think>, hidden)"),
    refusal: z.string().optional().describe("the model declined (OpenAI's message.refusal)"),
  })
  .strict();
export type LlmJournalReply = z.infer<typeof LlmJournalReply>;

/** One model request as accounted (to ClickHouse and metrics); a journal hit is a call that cost nothing. */
export const LlmCallRecord = z
  .object({
    callId: z.string(),
    requestKey: z.string().describe('the response journal key: the same for a call and its replays'),
    stage: LlmStage,
    provider: LlmProvider,
    model: z.string(),
    inputTokens: z.number().int().nonnegative(),
    outputTokens: z.number().int().nonnegative(),
    latencyMs: z.number().nonnegative().describe('from the first try sent to the reply, retries included'),
    costUsd: z.number().nonnegative(),
    cached: z.boolean().describe('answered from the response journal'),
    attempts: z.number().int().nonnegative().describe('requests sent for this call; 0 for a journal hit'),
    repair: z.boolean().describe('a second request asking to fix an invalid reply'),
    reasoningTokens: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .describe("of outputTokens, the model's reasoning"),
    at: z.number().int().describe('epoch ms when the reply was known'),
  })
  .strict();
export type LlmCallRecord = z.infer<typeof LlmCallRecord>;

/**
 * How one endpoint's model takes a request, learned from what it refused: each server speaks its own
 * dialect of the chat completions API, and the project's defaults are refused by some.
 */
export const Dialect = z
  .object({
    /** OpenAI's reasoning models (o-series, gpt-5) take no temperature but their default. */
    temperature: z.boolean(),
    /**
     * Both by default: OpenAI's reasoning models refuse `max_tokens`, older servers refuse
     * `max_completion_tokens` ("Unrecognized request argument supplied"), and Ollama and
     * llama-cpp-python ignore it, so only `max_tokens` bounds their replies.
     */
    maxTokens: z.boolean(),
    maxCompletionTokens: z.boolean(),
    /**
     * `json_schema` is OpenAI's; llama-cpp-python takes only `text` or `json_object`, with the
     * schema beside the type (llama_cpp/server/types.py: ChatCompletionRequestResponseFormat).
     */
    responseFormat: z.enum(['json_schema', 'json_object']),
    /**
     * A streamed request asks for the usage in its last chunk (`stream_options.include_usage`,
     * OpenAI's and vLLM's); a server that refuses the field is sent streams without it, and the
     * usage is then estimated.
     */
    streamOptions: z.boolean(),
    /**
     * The reply schema's string lengths (`maxLength`, `minLength`) are sent: a server that decodes
     * under a grammar made of the schema (llama.cpp, llama-cpp-python, vLLM, Ollama) then bounds
     * each string, and a small model that repeats itself inside one ends there instead of at
     * max_tokens. OpenAI's strict mode takes `pattern` and `format` for strings, no lengths
     * (platform.openai.com/docs/guides/structured-outputs, "Supported properties"), and refuses the
     * request: it is sent the schema without them, and the reply is still checked against them.
     */
    stringLengths: z.boolean(),
  })
  .strict();
export type Dialect = z.infer<typeof Dialect>;

/**
 * What the LLM layer learned of one endpoint's model: the fields it refused (its dialect), the
 * context its 400 named, the budget a thinking model needed, the concurrency its server took, and
 * whether it ends a stream when another request arrives.
 * Learned each at the price of a refused request, a cut-off reply or a ramp from 1; kept on the log
 * (llm/endpoint-memory.ts), a restart starts from them and pays none of that again.
 */
export const EndpointFacts = z
  .object({
    /** Partial: a field added to the dialect since the record was written takes its default. */
    dialect: Dialect.partial().optional(),
    contextTokens: z.number().int().positive().optional(),
    thinkingBudget: z.number().int().positive().optional(),
    concurrencyLimit: z.number().int().positive().optional(),
    /**
     * The server ends the reply it is streaming whenever another request arrives (llama-cpp-python's
     * `interrupt_requests`, on by default): it is sent one request at a time. Learned from streams
     * cut while others were sent (llm/flow/endpoint.ts).
     */
    interruptsStreams: z.boolean().optional(),
  })
  .strict();
export type EndpointFacts = z.infer<typeof EndpointFacts>;

/** One fact of an endpoint's model on llm.endpoints, keyed `<endpoint> <model> <fact>`. */
export const EndpointFactRecord = z
  .object({ endpoint: z.string(), model: z.string(), facts: EndpointFacts })
  .strict();
export type EndpointFactRecord = z.infer<typeof EndpointFactRecord>;
