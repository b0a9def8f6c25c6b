import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { Gauge, type Registry } from 'prom-client';
import type { ResponseJournal } from '../llm/index.js';
import { LlmJournalReply } from '../schemas/llm.js';
import { MAINTENANCE_SLICE_ROWS } from '../topology/runtime/embedded.js';

// The reward verifier's response journal: a reply per request key in one SQLite table, durable on
// put, so a restarted feeder answers a replayed rollout without paying again. Unlike the pipeline's
// journal, its replies are not settled by a step that commits (a reward has no step): it is a
// cache, and it is bounded as the pipeline's is compacted. It keeps `maxEntries` replies, the
// least recently used dropped first, at most MAINTENANCE_SLICE_ROWS per transaction (the embedded
// log's compaction slice) so that no put holds the event loop long; a file over the bound (the
// bound lowered) is brought under it slice by slice between turns of the event loop. Freed pages
// are reused, so the file stays at the size of the bound.

export const REWARD_VERIFIER_JOURNAL_ENTRIES = 'bioalchemy_reward_verifier_journal_entries';
export const REWARD_VERIFIER_JOURNAL_BYTES = 'bioalchemy_reward_verifier_journal_bytes';

export class VerifierJournal implements ResponseJournal {
  private readonly db: Database.Database;
  private readonly q: ReturnType<typeof statements>;
  /** Replies held: counted at open, then kept by put and trim. */
  private held: number;
  /** The order of use: `at` of the reply put or read last (older files hold milliseconds, all below). */
  private tick: number;
  private trimming: NodeJS.Immediate | null = null;

  constructor(
    path: string,
    private readonly maxEntries: number,
  ) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.exec(SCHEMA);
    this.q = statements(this.db);
    const { n, last } = this.q.counts.get()!;
    this.held = n;
    this.tick = last ?? 0;
    this.trim();
  }

  get(key: string): LlmJournalReply | undefined {
    const row = this.q.get.get(key);
    if (!row) return undefined;
    // A row another layout wrote is a miss: the call is made again, never answered wrongly.
    const parsed = LlmJournalReply.safeParse(JSON.parse(row.reply));
    if (!parsed.success) return undefined;
    this.q.touch.run(++this.tick, key);
    return parsed.data;
  }

  put(key: string, reply: LlmJournalReply): void {
    if (!this.q.has.get(key)) this.held++;
    this.q.put.run(key, JSON.stringify(reply), ++this.tick);
    this.trim();
  }

  /** Replies held, and the file's bytes (its pages, free ones included: what the disk holds). */
  get size(): { entries: number; bytes: number } {
    const pages = this.db.pragma('page_count', { simple: true }) as number;
    return { entries: this.held, bytes: pages * (this.db.pragma('page_size', { simple: true }) as number) };
  }

  close(): void {
    if (this.trimming) clearImmediate(this.trimming);
    this.trimming = null;
    this.db.close();
  }

  /** Drops the least recently used replies over the bound: a slice now, the rest in later turns. */
  private trim(): void {
    const over = this.held - this.maxEntries;
    if (over <= 0) return;
    this.held -= this.q.dropOldest.run(Math.min(over, MAINTENANCE_SLICE_ROWS)).changes;
    if (this.held > this.maxEntries && !this.trimming)
      this.trimming = setImmediate(() => {
        this.trimming = null;
        this.trim();
      });
  }
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, reply TEXT NOT NULL, at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS replies_by_use ON replies (at);`;

function statements(db: Database.Database) {
  return {
    counts: db.prepare<[], { n: number; last: number | null }>(
      'SELECT count(*) AS n, max(at) AS last FROM replies',
    ),
    get: db.prepare<[string], { reply: string }>('SELECT reply FROM replies WHERE key = ?'),
    has: db.prepare<[string], { one: number }>('SELECT 1 AS one FROM replies WHERE key = ?'),
    put: db.prepare<[string, string, number]>(
      'INSERT OR REPLACE INTO replies (key, reply, at) VALUES (?, ?, ?)',
    ),
    touch: db.prepare<[number, string]>('UPDATE replies SET at = ? WHERE key = ?'),
    dropOldest: db.prepare<[number]>(
      'DELETE FROM replies WHERE key IN (SELECT key FROM replies ORDER BY at LIMIT ?)',
    ),
  };
}

/** The journal's entries and bytes in `registry` (the feeder's /metrics), read at each scrape. */
export function verifierJournalGauges(registry: Registry, journal: VerifierJournal): void {
  const gauge = (name: string, help: string, pick: (s: VerifierJournal['size']) => number) => {
    // One per registry: a restarted verifier (tests) reports its own journal.
    if (registry.getSingleMetric(name)) registry.removeSingleMetric(name);
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(pick(journal.size));
      },
    });
  };
  gauge(
    REWARD_VERIFIER_JOURNAL_ENTRIES,
    "Verdicts in the reward verifier's journal on disk",
    (s) => s.entries,
  );
  gauge(REWARD_VERIFIER_JOURNAL_BYTES, "Bytes of the reward verifier's journal file", (s) => s.bytes);
}
