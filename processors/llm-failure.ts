import { LlmContextError, LlmRefusalError, LlmReplyError, LlmStoppedError } from '../llm/index.js';
import type { DeadLetterCode } from '../schemas/dead-letter.js';

/** An LLM call that failed for good: its reason, and what to keep in the dead letter. */
export interface LlmFailure {
  readonly code: Extract<
    DeadLetterCode,
    'llm-reply-invalid' | 'llm-request-refused' | 'llm-refusal' | 'llm-context-exceeded'
  >;
  readonly reason: string;
  readonly payload: string;
}

/**
 * The layer has retried whatever could pass; what is left belongs to this input alone: a reply
 * that would not validate even after its repair (kept raw in the dead letter), or a request the
 * endpoint refused (the input is kept).
 */
export function llmFailure(e: unknown, input: unknown): LlmFailure {
  // Stopping is no fault of the input: it stays uncommitted and is read again at the next start.
  if (e instanceof LlmStoppedError) throw e;
  if (e instanceof LlmReplyError)
    return { code: 'llm-reply-invalid', reason: `${e.stage}: ${e.reason}`, payload: e.raw };
  // The refusal's words are its reason; the input is kept, to be asked again elsewhere.
  if (e instanceof LlmRefusalError)
    return { code: 'llm-refusal', reason: e.message, payload: JSON.stringify(input) };
  if (e instanceof LlmContextError)
    return { code: 'llm-context-exceeded', reason: e.message, payload: JSON.stringify(input) };
  return { code: 'llm-request-refused', reason: (e as Error).message, payload: JSON.stringify(input) };
}
