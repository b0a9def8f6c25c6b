import { LlmReplyError, LlmStoppedError } from '../llm/index.js';
import type { DeadLetterCode } from '../schemas/dead-letter.js';

/** An LLM call that failed for good: its reason, and what to keep in the dead letter. */
export interface LlmFailure {
  readonly code: Extract<DeadLetterCode, 'llm-reply-invalid' | 'llm-request-refused'>;
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
  return { code: 'llm-request-refused', reason: (e as Error).message, payload: JSON.stringify(input) };
}
