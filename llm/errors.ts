import type { LlmStage } from '../schemas/llm.js';
import { RetryableError } from '../topology/task.js';

/**
 * The model answered, twice (the second time asked to fix the first), and neither reply is
 * usable. Deterministic for its input: the caller dead-letters it rather than retrying.
 */
export class LlmReplyError extends Error {
  override readonly name = 'LlmReplyError';
  constructor(
    readonly stage: LlmStage,
    /** The last reply as the model sent it. */
    readonly raw: string,
    /** Why it was refused: not JSON, cut off at maxTokens, or the schema's issues. */
    readonly reason: string,
    readonly callId: string,
  ) {
    super(`${stage}: unusable reply after a repair request: ${reason}`);
  }
}

/**
 * The model declined to answer (OpenAI's `message.refusal`). A reply of its own kind, not an
 * invalid one: asking it to fix its JSON would pay for a second refusal. Dead-lettered with the text.
 */
export class LlmRefusalError extends Error {
  override readonly name = 'LlmRefusalError';
  constructor(
    readonly stage: LlmStage,
    /** The model's words. */
    readonly refusal: string,
    readonly callId: string,
  ) {
    super(`${stage}: the model refused: ${refusal}`);
  }
}

/**
 * This input's prompt and the least reply budget do not fit the model's context: declared
 * (`contextTokens`), or as the server's 400 said (its words in `message`). A fault of the input,
 * not of the endpoint.
 */
export class LlmContextError extends Error {
  override readonly name = 'LlmContextError';
  constructor(
    readonly stage: LlmStage,
    message: string,
  ) {
    super(`${stage}: over the model's context: ${message}`);
  }
}

/**
 * The endpoint refused the request for good (4xx other than 408/409/429, or the same transient
 * failure more often than retry.maxAttempts while the endpoint otherwise answered).
 */
export class LlmRequestError extends Error {
  override readonly name = 'LlmRequestError';
  constructor(
    readonly stage: LlmStage,
    message: string,
    readonly status?: number,
  ) {
    super(`${stage}: ${message}`);
  }
}

/**
 * Why a request may succeed if sent again. `cut`: a streamed reply ended (its `[DONE]` or the end
 * of its body) before any finish_reason said it was complete; `unreadable`: the body is no chat
 * completion in any framing the provider reads.
 */
export type TransientReason = 'rate-limit' | 'server-error' | 'timeout' | 'connection' | 'cut' | 'unreadable';

/** Thrown by providers for a failure worth retrying; anything else they throw is final. */
export class TransientError extends Error {
  override readonly name = 'TransientError';
  constructor(
    readonly reason: TransientReason,
    message: string,
    /** What the endpoint asked for (Retry-After), if it did. */
    readonly retryAfterMs?: number,
    /** The HTTP status, when the endpoint answered one (llm/flow/faults.ts reads it). */
    readonly status?: number,
  ) {
    super(message);
  }
}

/**
 * The call was given up because the process is stopping (SIGTERM, SIGINT, a fault that ends
 * `run --until-idle`). Nobody's fault: its input is neither dead-lettered nor committed, and is
 * read again at the next start (a RetryableError to the engine, which stops instead of retrying).
 */
export class LlmStoppedError extends RetryableError {
  override readonly name = 'LlmStoppedError';
  constructor(readonly stage: LlmStage) {
    super(`${stage}: call given up: stopping`);
  }
}

/**
 * A streamed reply that ended (its `[DONE]`, or the end of its body) before any chunk said how it
 * finished (finish_reason): cut, never a reply. Sent again; never journaled.
 */
export class CutReplyError extends TransientError {
  constructor(
    /** The pieces of text that had come. */
    readonly pieces: number,
  ) {
    super(
      'cut',
      `the reply's stream ended without a finish_reason after ${pieces} piece(s): cut, not a reply`,
    );
  }
}

/**
 * The endpoint answered 200 with a body that is no chat completion: neither one JSON completion
 * (with `choices`) nor server-sent events of its chunks (an HTML page from a proxy, a truncated
 * body, an event that is not JSON). Retried as a server error is: one such body may be a hiccup,
 * the same for every input is the endpoint's fault (flow/faults.ts).
 */
export class UnreadableReplyError extends TransientError {
  constructor(
    /** As the server labelled the body; '' where it sent none. */
    readonly contentType: string,
    body: string,
  ) {
    const sample = body.length > 120 ? `${body.slice(0, 120)}…` : body;
    super(
      'unreadable',
      `the reply is no chat completion (Content-Type ${contentType || 'none'}): ${JSON.stringify(sample)}`,
    );
  }
}
