import type { LlmJournalReply, LlmMessage } from '../../schemas/llm.js';

export interface ProviderRequest {
  model: string;
  messages: LlmMessage[];
  /** The reply's JSON Schema and a name for it (OpenAI wants one). */
  schema: { name: string; schema: Record<string, unknown> };
  /** null: not sent, the model's own default. */
  temperature: number | null;
  maxTokens: number;
  timeoutMs: number;
  /** Aborts the request in flight: the process is stopping. */
  signal?: AbortSignal;
  /** Server-specific fields sent as they are (config `requestFields`); never ones the request owns. */
  fields?: Record<string, unknown>;
}

/**
 * One model backend. `chat` makes one request (and, where the endpoint refused a parameter it
 * sends by choice, that request again the way the endpoint takes it): it throws TransientError for what is worth
 * retrying and anything else for what is not; retries belong to the flow-control layer.
 */
export interface Provider {
  chat(request: ProviderRequest): Promise<LlmJournalReply>;
  close(): Promise<void>;
}
