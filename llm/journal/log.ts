import { LlmJournalReply } from '../../schemas/llm.js';
import { inputScope } from '../../topology/input-scope.js';
import { GLOBAL, type OutgoingRecord, partitionForKey, TOMBSTONE } from '../../topology/records.js';
import type { Runtime } from '../../topology/runtime/types.js';
import type { TopicSpec } from '../../topology/topology.js';
import type { ResponseJournal } from './journal.js';

/**
 * The response journal as a compacted topic of the log, on either runtime: each reply appended
 * the moment it arrives (outside any step's transaction: on Kafka by the idempotent producer, on
 * the embedded log in its own SQLite transaction), keyed by request key, in the partition of the
 * input it serves (the pipeline's topics have as many partitions as this one).
 *
 * A reply is needed until the step that used it commits: its tombstone (the value `null`) joins
 * the step that finishes its input, whatever the outcome, dead letters included
 * (topology/input-scope.ts), so the journal holds the work in flight, not the history. The
 * embedded log's compaction removes both; on Kafka the broker compacts the reply away within the
 * hour (segment.ms) and drops the tombstone an hour later (delete.retention.ms, set for a cache
 * topic in topology/runtime/kafka/index.ts). A process keeps the last few MB of settled replies
 * in memory (RecentReplies), for inputs that ask the same again. After a kill -9 a restarted
 * worker finds every reply that arrived for inputs not yet committed, and pays again only for
 * calls whose replies had not.
 * A worker reads a partition of the journal the first time one of its inputs asks for a reply:
 * only the partitions it works on.
 */
export const JOURNAL_TOPIC: TopicSpec = {
  name: 'llm.journal',
  partitions: 4,
  compacted: true,
  // A journal of fewer partitions (1 before this layout) is grown at start, its replies dropped.
  cache: true,
  retentionMs: null,
  schema: 'llm-reply',
  description:
    'LLM replies of the inputs in flight, by request key, in their input partition (the response journal)',
};

/** What reading one partition of the journal found. */
export interface JournalRestore {
  readonly partition: number;
  /** Replies still pending (no tombstone after them). */
  readonly replies: number;
  /** Records that are no reply (not JSON, another layout, no key): misses, their calls are made again. */
  readonly unreadable: number;
}

export class LogJournal implements ResponseJournal {
  /**
   * Replies by request key, with the journal partition each lies in: of the partitions read, those
   * not settled yet, and this process's own.
   */
  private readonly replies = new Map<string, { reply: LlmJournalReply; partition: number }>();
  /** Per journal partition, its reading (started on first use). */
  private readonly restored = new Map<number, Promise<void> | true>();
  /** Records read that are no reply, over the partitions read so far. */
  unreadable = 0;
  /**
   * Replies whose step committed, kept a while in memory only: the model writing one question
   * twice gives two inputs with one prompt, and the second, in a later step, would pay again.
   */
  private readonly recent = new RecentReplies(RECENT_REPLY_CHARS);
  /** Replies to append at the end of this turn of the event loop, and that append (see write). */
  private writing: { readonly records: OutgoingRecord[]; readonly done: Promise<void> } | null = null;

  private constructor(
    private readonly runtime: Runtime,
    private readonly topic: string,
    private readonly partitions: number,
    private readonly onRestore: (restore: JournalRestore) => void,
  ) {}

  /** The journal on `topic`, which must exist (ensureTopics); nothing is read until a reply is asked for. */
  static async open(
    runtime: Runtime,
    opts: { topic?: string; onRestore?: (restore: JournalRestore) => void } = {},
  ): Promise<LogJournal> {
    const topic = opts.topic ?? JOURNAL_TOPIC.name;
    const partitions = (await runtime.endOffsets(topic)).length;
    return new LogJournal(runtime, topic, partitions, opts.onRestore ?? (() => {}));
  }

  /** Replies pending: not settled by a commit yet (the recent ones kept after are not counted). */
  get size(): number {
    return this.replies.size;
  }

  get(key: string): LlmJournalReply | undefined | Promise<LlmJournalReply | undefined> {
    const found = () => {
      const held = this.replies.get(key);
      if (held) {
        // Its tombstone goes where it lies: an input of another partition may use it (it waited
        // on the same request in flight).
        this.settle(key, held.partition);
        return held.reply;
      }
      const recent = this.recent.take(key);
      // Asked again after the step that used it committed: journaled again for this input, so
      // that a kill before this input's step commits does not pay for it either.
      return recent && this.put(key, recent).then(() => recent);
    };
    const restoring = this.restore(this.partitionOf(key));
    return restoring === true ? found() : restoring.then(found);
  }

  async put(key: string, reply: LlmJournalReply): Promise<void> {
    const partition = this.partitionOf(key);
    await this.write({ topic: this.topic, key, value: JSON.stringify(reply), partition });
    this.replies.set(key, { reply, partition });
    this.settle(key, partition);
  }

  /**
   * Appends a reply together with the others that arrive in the same turn of the event loop: one
   * write (one SQLite transaction, one produce) for them all. One each cost a tenth of the
   * pipeline's CPU with the model at 1 ms a call. A reply waits at most that turn before it is
   * journaled: a kill -9 within it pays that call again, as for a reply still in transit.
   */
  private write(record: OutgoingRecord): Promise<void> {
    if (!this.writing) {
      const records: OutgoingRecord[] = [];
      const done = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        // Replies from here on go to the next write.
        this.writing = null;
        return this.runtime.append(records);
      });
      this.writing = { records, done };
    }
    this.writing.records.push(record);
    return this.writing.done;
  }

  /**
   * The journal partition of a reply: its input's partition, or outside any input (a call made
   * by hand, a test) the key's, as the log would place it.
   */
  private partitionOf(key: string): number {
    const scope = inputScope();
    return scope && scope.partition !== GLOBAL
      ? scope.partition % this.partitions
      : partitionForKey(key, this.partitions);
  }

  /** Once the step of the input that used the reply commits, the reply leaves the journal. */
  private settle(key: string, partition: number): void {
    const scope = inputScope();
    if (!scope) return;
    scope.settleWith(
      `${this.topic}\u0000${key}`,
      {
        topic: this.topic,
        key,
        value: TOMBSTONE,
        partition,
        ...(scope.partition === GLOBAL ? {} : { from: scope.partition }),
      },
      () => {
        const held = this.replies.get(key);
        if (!held) return;
        this.replies.delete(key);
        this.recent.add(key, held.reply);
      },
    );
  }

  /** Reads a partition once; `true` once it has been read. */
  private restore(partition: number): Promise<void> | true {
    let restoring = this.restored.get(partition);
    if (!restoring) {
      restoring = this.read(partition).then(
        () => void this.restored.set(partition, true),
        (err) => {
          // Read again at the next ask: a log that failed once (a broker restarting) may answer then.
          this.restored.delete(partition);
          throw err;
        },
      );
      this.restored.set(partition, restoring);
    }
    return restoring;
  }

  private async read(partition: number): Promise<void> {
    const end = (await this.runtime.endOffsets(this.topic))[partition] ?? 0;
    const pending = new Map<string, LlmJournalReply>();
    let unreadable = 0;
    for (let from = 0; from < end; ) {
      const records = await this.runtime.read(this.topic, partition, from, 5000);
      if (records.length === 0) break;
      for (const r of records) {
        if (r.key !== null && r.value === TOMBSTONE) {
          pending.delete(r.key);
          continue;
        }
        // A reply of an older layout is a miss: the call is made again and journaled anew. So
        // is anything else a producer put here by hand (no key, not JSON): the journal is a
        // cache, and a record it cannot use must not keep `run` from starting.
        const parsed = r.key === null ? null : LlmJournalReply.safeParse(parseJson(r.value));
        if (parsed?.success) pending.set(r.key!, parsed.data);
        else unreadable++;
      }
      from = records[records.length - 1]!.offset + 1;
    }
    // A reply this process journaled while the partition was being read is newer than what was read.
    for (const [key, reply] of pending)
      if (!this.replies.has(key)) this.replies.set(key, { reply, partition });
    this.unreadable += unreadable;
    this.onRestore({ partition, replies: pending.size, unreadable });
  }
}

/** What the journal keeps of replies whose step committed: about 2,000 of the pipeline's, a few MB. */
export const RECENT_REPLY_CHARS = 4 * 2 ** 20;

/** Replies by key, oldest dropped first once their contents pass `maxChars`: a bound, not history. */
export class RecentReplies {
  private readonly replies = new Map<string, LlmJournalReply>();
  private chars = 0;

  constructor(private readonly maxChars: number) {}

  get size(): number {
    return this.replies.size;
  }

  add(key: string, reply: LlmJournalReply): void {
    this.take(key);
    this.replies.set(key, reply);
    this.chars += reply.content.length;
    for (const [oldest, dropped] of this.replies) {
      if (this.chars <= this.maxChars) break;
      this.replies.delete(oldest);
      this.chars -= dropped.content.length;
    }
  }

  /** The reply, removed: it is pending again until its new user's step commits. */
  take(key: string): LlmJournalReply | undefined {
    const reply = this.replies.get(key);
    if (reply) {
      this.replies.delete(key);
      this.chars -= reply.content.length;
    }
    return reply;
  }
}

/** The JSON value of a record read off the log, or undefined where it is none (read as a miss, not an error). */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
