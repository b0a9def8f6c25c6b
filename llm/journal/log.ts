import { LlmJournalReply } from '../../schemas/llm.js';
import type { Runtime } from '../../topology/runtime/types.js';
import type { TopicSpec } from '../../topology/topology.js';
import type { ResponseJournal } from './journal.js';

/**
 * The response journal as a compacted topic of the log, on either runtime: each reply appended
 * the moment it arrives (outside any step's transaction: on Kafka by the idempotent producer, on
 * the embedded log in its own SQLite transaction), keyed by request key, and read whole at start.
 * Compaction keeps one reply per key, so a restarted worker, here or on another machine, finds
 * every reply that arrived and pays again only for calls whose replies had not.
 *
 * One partition: a worker restores the whole journal. Placing each reply with the input
 * partition it serves, so a worker restores only its own, comes with scale-out.
 */
export const JOURNAL_TOPIC: TopicSpec = {
  name: 'llm.journal',
  partitions: 1,
  compacted: true,
  retentionMs: null,
  schema: 'llm-reply',
  description: 'LLM replies by request key, appended as they arrive (the response journal)',
};

export class LogJournal implements ResponseJournal {
  private constructor(
    private readonly runtime: Runtime,
    private readonly replies: Map<string, LlmJournalReply>,
    /** Records read at open that are no reply (not JSON, another layout, no key): misses, for `run` to report. */
    readonly unreadable: number,
  ) {}

  /** Reads the journal topic to its end; the topic must exist (ensureTopics). */
  static async open(runtime: Runtime, topic = JOURNAL_TOPIC.name): Promise<LogJournal> {
    const replies = new Map<string, LlmJournalReply>();
    let unreadable = 0;
    for (const [partition, end] of (await runtime.endOffsets(topic)).entries()) {
      for (let from = 0; from < end; ) {
        const records = await runtime.read(topic, partition, from, 5000);
        if (records.length === 0) break;
        for (const r of records) {
          // A reply of an older layout is a miss: the call is made again and journaled anew. So
          // is anything else a producer put here by hand (no key, not JSON): the journal is a
          // cache, and a record it cannot use must not keep `run` from starting.
          const parsed = r.key === null ? null : LlmJournalReply.safeParse(parseJson(r.value));
          if (parsed?.success) replies.set(r.key!, parsed.data);
          else unreadable++;
        }
        from = records[records.length - 1]!.offset + 1;
      }
    }
    return new LogJournal(runtime, replies, unreadable);
  }

  get size(): number {
    return this.replies.size;
  }

  get(key: string): LlmJournalReply | undefined {
    return this.replies.get(key);
  }

  async put(key: string, reply: LlmJournalReply): Promise<void> {
    await this.runtime.append([{ topic: JOURNAL_TOPIC.name, key, value: JSON.stringify(reply) }]);
    this.replies.set(key, reply);
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
