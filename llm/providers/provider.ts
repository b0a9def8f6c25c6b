import type { LlmJournalReply, LlmMessage } from '../../schemas/llm.js';

export interface ProviderRequest {
  model: string;
  messages: LlmMessage[];
  /** The reply's JSON Schema and a name for it (OpenAI wants one). */
  schema: { name: string; schema: Record<string, unknown> };
  temperature: number;
  maxTokens: number;
  timeoutMs: number;
  /** Aborts the request in flight: the process is stopping. */
  signal?: AbortSignal;
}

/**
 * One model backend. `chat` makes exactly one request: it throws TransientError for what is worth
 * retrying and anything else for what is not; retries belong to the flow-control layer.
 */
export interface Provider {
  chat(request: ProviderRequest): Promise<LlmJournalReply>;
  close(): Promise<void>;
}
