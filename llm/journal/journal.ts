import type { LlmJournalReply } from '../../schemas/llm.js';

/**
 * Durable replies keyed by request (see key.ts). `put` must be durable when its promise resolves:
 * the caller relies on it to never pay twice for a reply after a crash. Either method may be
 * synchronous (e.g. `get` over a map restored at start).
 */
export interface ResponseJournal {
  get(key: string): LlmJournalReply | undefined | Promise<LlmJournalReply | undefined>;
  put(key: string, reply: LlmJournalReply): void | Promise<void>;
}
