import type { LlmJournalReply, LlmMessage } from '../../schemas/llm.js';

export interface ProviderRequest {
  model: string;
  messages: LlmMessage[];
  /** The reply's JSON Schema and a name for it (OpenAI wants one). */
  schema: { name: string; schema: Record<string, unknown> };
  /** null: not sent, the model's own default. */
  temperature: number | null;
  maxTokens: number;
  /** The whole reply's bound, from sent to the last of it. */
  timeoutMs: number;
  /**
   * Ask for the reply as it is decoded, and give it up when it makes no progress: no first chunk
   * within `firstChunkMs`, or a silence over `stallMs` between chunks. Unset: one whole reply.
   */
  stream?: { firstChunkMs: number; stallMs: number };
  /** Called once when a streamed reply's first chunk arrives: the server took the request into a slot. */
  started?: () => void;
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
  /**
   * The requests the server says it decodes at once, where it says (llama-server's /props
   * total_slots, TGI's /info max_concurrent_requests); undefined where it does not.
   */
  statedCapacity(): Promise<number | undefined>;
  close(): Promise<void>;
}
