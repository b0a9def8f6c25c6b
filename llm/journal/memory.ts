import type { LlmJournalReply } from '../../schemas/llm.js';
import type { ResponseJournal } from './journal.js';

/** A journal that lasts as long as the process: tests, and runs that need no replay. */
export class MemoryJournal implements ResponseJournal {
  private readonly replies = new Map<string, LlmJournalReply>();

  get(key: string): LlmJournalReply | undefined {
    return this.replies.get(key);
  }

  put(key: string, reply: LlmJournalReply): void {
    this.replies.set(key, reply);
  }

  get size(): number {
    return this.replies.size;
  }
}
