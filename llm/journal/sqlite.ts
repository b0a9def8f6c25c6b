import Database from 'better-sqlite3';
import { LlmJournalReply } from '../../schemas/llm.js';
import type { ResponseJournal } from './journal.js';

/**
 * A journal in one SQLite table (WAL). A put is committed before it returns, so it survives the
 * process being killed; synchronous=NORMAL trades the last moments before a power loss for speed.
 */
export class SqliteJournal implements ResponseJournal {
  private readonly db: Database.Database;
  private readonly select: Database.Statement<[string], { reply: string }>;
  private readonly insert: Database.Statement<[string, string, number]>;

  constructor(path: string) {
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.exec(
      'CREATE TABLE IF NOT EXISTS llm_journal (key TEXT PRIMARY KEY, reply TEXT NOT NULL, at INTEGER NOT NULL)',
    );
    this.select = this.db.prepare('SELECT reply FROM llm_journal WHERE key = ?');
    this.insert = this.db.prepare('INSERT OR REPLACE INTO llm_journal (key, reply, at) VALUES (?, ?, ?)');
  }

  get(key: string): LlmJournalReply | undefined {
    const row = this.select.get(key);
    // A row that no longer parses (written by an older layout) is a miss: the call is made again.
    const parsed = row && LlmJournalReply.safeParse(JSON.parse(row.reply));
    return parsed?.success ? parsed.data : undefined;
  }

  put(key: string, reply: LlmJournalReply): void {
    this.insert.run(key, JSON.stringify(reply), Date.now());
  }

  close(): void {
    this.db.close();
  }
}
