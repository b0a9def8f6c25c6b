import { EventEmitter } from 'node:events';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import {
  GLOBAL,
  type LogRecord,
  type Offset,
  type OutgoingRecord,
  partitionForKey,
  partitionKey,
  type StateChange,
  TOMBSTONE,
} from '../records.js';
import { PARTITIONS_FIXED, type TopicSpec } from '../topology.js';
import {
  FencedError,
  type LogTask,
  type LogTransaction,
  type Runtime,
  type StoredValue,
  type TaskSpec,
} from './types.js';

/**
 * A store's rows for one scope: a global store under its name (as before stores had scopes), a
 * partition's under "name#partition". One process owns every partition, so all are in the file.
 */
const storeColumn = (store: string, partition: number) =>
  partition === GLOBAL ? store : `${store}#${partition}`;

/**
 * Values longer than this (characters) are kept out of the records b-tree, in large_values, with
 * `value_ref` pointing at them. records is WITHOUT ROWID: its rows are in the b-tree's interior
 * pages too, and SQLite compares a key that overflowed its page by reading the whole row. One
 * 10 MB value produced by hand made every seek that met it read 10 MB: polls of every processor,
 * for as long as the record stayed in the log (a round of empty polls of the pipeline's 22
 * partitions went from 0.5 ms to 26 ms with one such record, 100 ms with six; ~0.5 ms now).
 */
const INLINE_MAX_CHARS = 64 * 1024;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS topics (
  name TEXT PRIMARY KEY, partitions INTEGER NOT NULL, compacted INTEGER NOT NULL, retention_ms INTEGER);
CREATE TABLE IF NOT EXISTS partitions (
  topic TEXT NOT NULL, partition INTEGER NOT NULL, next_offset INTEGER NOT NULL,
  PRIMARY KEY (topic, partition)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS records (
  topic TEXT NOT NULL, partition INTEGER NOT NULL, offset INTEGER NOT NULL,
  key TEXT, value TEXT NOT NULL, ts INTEGER NOT NULL, validated_as TEXT, value_ref INTEGER,
  PRIMARY KEY (topic, partition, offset)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS large_values (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS group_offsets (
  grp TEXT NOT NULL, topic TEXT NOT NULL, partition INTEGER NOT NULL, next_offset INTEGER NOT NULL,
  PRIMARY KEY (grp, topic, partition)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS compaction_latest (
  topic TEXT NOT NULL, partition INTEGER NOT NULL, key TEXT NOT NULL, offset INTEGER NOT NULL,
  PRIMARY KEY (topic, partition, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS compaction_superseded (
  id INTEGER PRIMARY KEY, topic TEXT NOT NULL, partition INTEGER NOT NULL, offset INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS state (
  grp TEXT NOT NULL, store TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
  PRIMARY KEY (grp, store, key)) WITHOUT ROWID;
`;

/**
 * The zero-set-up log: topics, offsets, consumer-group positions and state stores in one SQLite
 * file (WAL). A step is one SQLite transaction, so it is atomic across a kill -9. `:memory:`
 * gives the same log without a file, for the test driver.
 */
export class EmbeddedRuntime implements Runtime {
  readonly name = 'embedded';
  readonly db: Database.Database;
  /** Wakes pollers of this process at once; pollers also re-check on a short interval for other processes. */
  private readonly appended = new EventEmitter().setMaxListeners(0);
  private readonly nullKeyCounter = new Map<string, number>();
  /** Topic settings never change once created, so they are read from the file once. */
  private readonly topicCache = new Map<string, { partitions: number; compacted: number }>();
  /** The maintenance pass under way: a pass asked for meanwhile joins it. */
  private maintaining: Promise<number> | null = null;
  /**
   * Each partition's next offset as this connection last knew it, so a poll passes over a
   * partition with nothing new without reading it: a processor with a window polls each time an
   * input finishes (216,000 reads, most of them empty, in a 3,000-article run: a fifth of its CPU).
   * It holds while no other connection commits; SQLite's data_version says when one did, and the
   * table (a row per partition) is read again. This connection's appends set it as they allocate;
   * one rolled back leaves it high, which costs a read that finds nothing, never a record missed.
   */
  private readonly ends = new Map<string, number>();
  private endsVersion: number | null = null;
  /** What the last maintenance pass did, slice by slice: for tests and the benchmark. */
  lastMaintenance = { removed: 0, slices: 0, largestSliceRows: 0 };
  /** Prepared statements, shared with this runtime's tasks. */
  readonly stmts;

  constructor(readonly path: string) {
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    // NORMAL survives a process crash (kill -9) in WAL mode; only an OS crash can lose the last commits.
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 10000');
    const indexed = this.db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'compaction_latest'")
      .get();
    this.db.exec(SCHEMA);
    // Logs written before records carried the writer's stamp: their records are validated on read.
    const columns = this.db.prepare<[], { name: string }>('PRAGMA table_info(records)').all();
    if (!columns.some((c) => c.name === 'validated_as'))
      this.db.exec('ALTER TABLE records ADD COLUMN validated_as TEXT');
    // Logs written before large values were kept apart (INLINE_MAX_CHARS): their rows stay inline.
    if (!columns.some((c) => c.name === 'value_ref'))
      this.db.exec('ALTER TABLE records ADD COLUMN value_ref INTEGER');
    // Compaction and retention delete records; a large value goes with its record.
    this.db.exec(
      'CREATE TRIGGER IF NOT EXISTS records_large_value AFTER DELETE ON records WHEN old.value_ref IS NOT NULL ' +
        'BEGIN DELETE FROM large_values WHERE id = old.value_ref; END',
    );
    // A log written before compaction was indexed: index what its compacted topics hold, once.
    if (!indexed) this.db.transaction(() => this.db.exec(BACKFILL_COMPACTION)).immediate();
    this.stmts = {
      topic: this.db.prepare<
        [string],
        { partitions: number; compacted: number; retention_ms: number | null }
      >('SELECT partitions, compacted, retention_ms FROM topics WHERE name = ?'),
      bump: this.db.prepare<[number, string, number], { next_offset: number }>(
        'UPDATE partitions SET next_offset = next_offset + ? WHERE topic = ? AND partition = ? RETURNING next_offset',
      ),
      insert: this.db.prepare(
        'INSERT INTO records (topic, partition, offset, key, value, ts, validated_as, value_ref) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      insertLarge: this.db.prepare<[string]>('INSERT INTO large_values (value) VALUES (?)'),
      read: this.db.prepare<
        [string, number, number, number],
        { offset: number; key: string | null; value: string; ts: number; validated_as: string | null }
      >(
        'SELECT r.offset, r.key, coalesce(l.value, r.value) AS value, r.ts, r.validated_as FROM records r ' +
          'LEFT JOIN large_values l ON l.id = r.value_ref ' +
          'WHERE r.topic = ? AND r.partition = ? AND r.offset >= ? ORDER BY r.offset LIMIT ?',
      ),
      ends: this.db.prepare<[string], { partition: number; next_offset: number }>(
        'SELECT partition, next_offset FROM partitions WHERE topic = ? ORDER BY partition',
      ),
      allEnds: this.db.prepare<[], { topic: string; partition: number; next_offset: number }>(
        'SELECT topic, partition, next_offset FROM partitions',
      ),
      dataVersion: this.db.prepare<[], number>('PRAGMA data_version').pluck(),
      groupOffset: this.db.prepare<[string, string, number], { next_offset: number }>(
        'SELECT next_offset FROM group_offsets WHERE grp = ? AND topic = ? AND partition = ?',
      ),
      setGroupOffset: this.db.prepare(
        'INSERT INTO group_offsets (grp, topic, partition, next_offset) VALUES (?, ?, ?, ?) ' +
          'ON CONFLICT (grp, topic, partition) DO UPDATE SET next_offset = excluded.next_offset',
      ),
      getState: this.db.prepare<[string, string, string], { value: string }>(
        'SELECT value FROM state WHERE grp = ? AND store = ? AND key = ?',
      ),
      putState: this.db.prepare(
        'INSERT INTO state (grp, store, key, value) VALUES (?, ?, ?, ?) ON CONFLICT (grp, store, key) DO UPDATE SET value = excluded.value',
      ),
      deleteState: this.db.prepare('DELETE FROM state WHERE grp = ? AND store = ? AND key = ?'),
      latestOf: this.db.prepare<[string, number, string], { offset: number }>(
        'SELECT offset FROM compaction_latest WHERE topic = ? AND partition = ? AND key = ?',
      ),
      setLatest: this.db.prepare(
        'INSERT INTO compaction_latest (topic, partition, key, offset) VALUES (?, ?, ?, ?) ' +
          'ON CONFLICT (topic, partition, key) DO UPDATE SET offset = excluded.offset',
      ),
      dropLatest: this.db.prepare(
        'DELETE FROM compaction_latest WHERE topic = ? AND partition = ? AND key = ? AND offset = ?',
      ),
      supersede: this.db.prepare(
        'INSERT INTO compaction_superseded (topic, partition, offset) VALUES (?, ?, ?)',
      ),
      supersededSlice: this.db.prepare<
        [number],
        { id: number; topic: string; partition: number; offset: number }
      >('SELECT id, topic, partition, offset FROM compaction_superseded ORDER BY id LIMIT ?'),
      forgetSuperseded: this.db.prepare('DELETE FROM compaction_superseded WHERE id <= ?'),
      deleteRecord: this.db.prepare('DELETE FROM records WHERE topic = ? AND partition = ? AND offset = ?'),
      oldestRecords: this.db.prepare<
        [string, number, number],
        { offset: number; key: string | null; ts: number }
      >('SELECT offset, key, ts FROM records WHERE topic = ? AND partition = ? ORDER BY offset LIMIT ?'),
      storeRows: this.db.prepare<
        [string, string, string, string],
        { store: string; key: string; value: string }
      >(
        "SELECT store, key, value FROM state WHERE grp = ? AND (store = ? OR substr(store, 1, length(?) + 1) = ? || '#')",
      ),
    };
  }

  /** Opens (creating) the log under a data directory, or in memory for ':memory:'. */
  static open(dataDir: string): EmbeddedRuntime {
    if (dataDir === ':memory:') return new EmbeddedRuntime(':memory:');
    mkdirSync(dataDir, { recursive: true });
    return new EmbeddedRuntime(join(dataDir, 'log.sqlite'));
  }

  async ensureTopics(topics: readonly TopicSpec[]): Promise<void> {
    const create = this.db.transaction(() => {
      for (const t of topics) {
        const existing = this.stmts.topic.get(t.name);
        if (existing) {
          if (t.cache && t.compacted && existing.compacted && existing.partitions < t.partitions) {
            this.growCache(t.name, existing.partitions, t.partitions);
            continue;
          }
          if (existing.retention_ms !== t.retentionMs) {
            // Retention is the topology's to set, and changing it moves no record: a folder made
            // before a topic had one gets it.
            this.db.prepare('UPDATE topics SET retention_ms = ? WHERE name = ?').run(t.retentionMs, t.name);
          }
          if (existing.partitions !== t.partitions || Boolean(existing.compacted) !== t.compacted) {
            throw new Error(
              `topic "${t.name}" exists with ${existing.partitions} partitions${existing.compacted ? ', compacted' : ''}; ` +
                `the topology wants ${t.partitions}${t.compacted ? ', compacted' : ''}${existing.partitions !== t.partitions ? `: ${PARTITIONS_FIXED}` : ''}`,
            );
          }
          continue;
        }
        this.db
          .prepare('INSERT INTO topics (name, partitions, compacted, retention_ms) VALUES (?, ?, ?, ?)')
          .run(t.name, t.partitions, t.compacted ? 1 : 0, t.retentionMs);
        const addPartition = this.db.prepare(
          'INSERT INTO partitions (topic, partition, next_offset) VALUES (?, ?, 0)',
        );
        for (let p = 0; p < t.partitions; p++) addPartition.run(t.name, p);
      }
    });
    create.immediate();
  }

  /**
   * Grows a cache topic (see TopicSpec.cache) from `from` to `to` partitions, inside ensureTopics'
   * transaction. Every key it held gets a tombstone first: records were placed for `from`
   * partitions, and a reader of the new layout must not hold them (the journal's partition 0 of
   * a data folder from before it had 4 held every reply ever made). A reply dropped so costs at
   * most one call made again.
   */
  private growCache(topic: string, from: number, to: number): void {
    // The compaction index holds each live key once: no scan of the topic's history.
    const keys = this.db
      .prepare<[string], { partition: number; key: string }>(
        'SELECT partition, key FROM compaction_latest WHERE topic = ?',
      )
      .all(topic);
    this.appendInTransaction(keys.map(({ partition, key }) => ({ topic, key, value: TOMBSTONE, partition })));
    this.db.prepare('UPDATE topics SET partitions = ? WHERE name = ?').run(to, topic);
    const addPartition = this.db.prepare(
      'INSERT INTO partitions (topic, partition, next_offset) VALUES (?, ?, 0)',
    );
    for (let p = from; p < to; p++) addPartition.run(topic, p);
    this.topicCache.delete(topic);
  }

  /** Appends inside the caller's SQLite transaction; offsets are allocated per partition. */
  appendInTransaction(records: readonly OutgoingRecord[]): void {
    const byPartition = new Map<string, { topic: string; partition: number; records: OutgoingRecord[] }>();
    for (const r of records) {
      const partition = r.partition ?? this.partitionFor(r.topic, r.key);
      const k = partitionKey(r.topic, partition);
      let group = byPartition.get(k);
      if (!group) {
        group = { topic: r.topic, partition, records: [] };
        byPartition.set(k, group);
      }
      group.records.push(r);
    }
    const now = Date.now();
    for (const { topic, partition, records: rs } of byPartition.values()) {
      const bumped = this.stmts.bump.get(rs.length, topic, partition);
      if (!bumped) throw new Error(`unknown topic or partition ${topic}/${partition}`);
      this.ends.set(partitionKey(topic, partition), bumped.next_offset);
      const { compacted } = this.topicSpec(topic);
      let offset = bumped.next_offset - rs.length;
      for (const r of rs) {
        const large = r.value.length > INLINE_MAX_CHARS;
        const ref = large ? this.stmts.insertLarge.run(r.value).lastInsertRowid : null;
        if (compacted && r.key !== null) this.index(topic, partition, r.key, offset, r.value);
        this.stmts.insert.run(
          topic,
          partition,
          offset++,
          r.key,
          large ? '' : r.value,
          now,
          r.validatedAs ?? null,
          ref,
        );
      }
    }
  }

  /**
   * Keeps a compacted topic's index: the latest offset per key, and the records a newer one
   * superseded, which the next maintain() deletes. A tombstone (the value `null`) supersedes the
   * key's value and itself: the key leaves the partition, as on Kafka after delete.retention.ms.
   */
  private index(topic: string, partition: number, key: string, offset: number, value: string): void {
    const previous = this.stmts.latestOf.get(topic, partition, key);
    if (previous) this.stmts.supersede.run(topic, partition, previous.offset);
    if (value === TOMBSTONE) {
      if (previous) this.stmts.dropLatest.run(topic, partition, key, previous.offset);
      this.stmts.supersede.run(topic, partition, offset);
    } else this.stmts.setLatest.run(topic, partition, key, offset);
  }

  private partitionFor(topic: string, key: string | null): number {
    const spec = this.topicSpec(topic);
    if (key !== null) return partitionForKey(key, spec.partitions);
    const n = this.nullKeyCounter.get(topic) ?? 0;
    this.nullKeyCounter.set(topic, n + 1);
    return n % spec.partitions;
  }

  private topicSpec(topic: string): { partitions: number; compacted: number } {
    let spec = this.topicCache.get(topic);
    if (!spec) {
      spec = this.stmts.topic.get(topic);
      if (!spec) throw new Error(`unknown topic "${topic}"`);
      this.topicCache.set(topic, spec);
    }
    return spec;
  }

  /** Reads the partitions' next offsets again if another connection committed since the last look. */
  refreshEnds(): void {
    const version = this.stmts.dataVersion.get()!;
    if (version === this.endsVersion) return;
    this.ends.clear();
    for (const r of this.stmts.allEnds.all())
      this.ends.set(partitionKey(r.topic, r.partition), r.next_offset);
    this.endsVersion = version;
  }

  /** Whether a partition may hold a record at `offset` or past it, as of the last refreshEnds(). */
  mayHaveFrom(topic: string, partition: number, offset: number): boolean {
    const end = this.ends.get(partitionKey(topic, partition));
    return end === undefined || offset < end;
  }

  notify(): void {
    this.appended.emit('append');
  }

  async append(records: readonly OutgoingRecord[]): Promise<void> {
    this.db.transaction(() => this.appendInTransaction(records)).immediate();
    this.notify();
  }

  async read(topic: string, partition: number, fromOffset: number, max: number): Promise<LogRecord[]> {
    return this.stmts.read.all(topic, partition, fromOffset, max).map((r) => toRecord(topic, partition, r));
  }

  /** Like read, but stops once the values taken add up to maxChars characters (taking at least one). */
  readBounded(
    topic: string,
    partition: number,
    fromOffset: number,
    max: number,
    maxChars: number,
  ): LogRecord[] {
    const out: LogRecord[] = [];
    let chars = 0;
    // Row by row, so the rows past the bound are never loaded.
    for (const r of this.stmts.read.iterate(topic, partition, fromOffset, max)) {
      out.push(toRecord(topic, partition, r));
      chars += r.value.length;
      if (chars >= maxChars) break;
    }
    return out;
  }

  async endOffsets(topic: string): Promise<number[]> {
    const rows = this.stmts.ends.all(topic);
    if (rows.length === 0) throw new Error(`unknown topic "${topic}"`);
    return rows.map((r) => r.next_offset);
  }

  async committedOffsets(group: string, topics: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const topic of topics) {
      for (let p = 0; p < this.topicSpec(topic).partitions; p++) {
        const row = this.stmts.groupOffset.get(group, topic, p);
        if (row) out.set(partitionKey(topic, p), row.next_offset);
      }
    }
    return out;
  }

  /**
   * Drops records superseded by a newer value of their key (compacted topics) and records past
   * retention. The work is what there is to remove, found through the index append keeps, never
   * a scan of history; it runs in slices of at most MAINTENANCE_SLICE_ROWS rows, each its own
   * transaction, with the event loop free between them: a pass over 300,000 journal records used
   * to hold it for minutes in one statement.
   */
  maintain(now = Date.now()): Promise<number> {
    this.maintaining ??= this.maintainInSlices(now).finally(() => {
      this.maintaining = null;
    });
    return this.maintaining;
  }

  private async maintainInSlices(now: number): Promise<number> {
    const pass = { removed: 0, slices: 0, largestSliceRows: 0 };
    this.lastMaintenance = pass;
    const slice = (work: () => number): number => {
      const rows = this.db.transaction(work).immediate();
      pass.slices++;
      pass.largestSliceRows = Math.max(pass.largestSliceRows, rows);
      return rows;
    };
    const { stmts } = this;
    for (;;) {
      if (!this.db.open) return pass.removed;
      const rows = slice(() => {
        const superseded = stmts.supersededSlice.all(MAINTENANCE_SLICE_ROWS);
        for (const r of superseded)
          pass.removed += stmts.deleteRecord.run(r.topic, r.partition, r.offset).changes;
        if (superseded.length) stmts.forgetSuperseded.run(superseded[superseded.length - 1]!.id);
        return superseded.length;
      });
      if (rows < MAINTENANCE_SLICE_ROWS) break;
      await yieldToLoop();
    }
    const retained = this.db
      .prepare<[], { name: string; partitions: number; compacted: number; retention_ms: number }>(
        'SELECT name, partitions, compacted, retention_ms FROM topics WHERE retention_ms IS NOT NULL',
      )
      .all();
    for (const t of retained) {
      for (let p = 0; p < t.partitions; p++) {
        // Records are appended in time order: the expired ones are a prefix of the partition.
        for (let expired = true; expired; ) {
          await yieldToLoop();
          if (!this.db.open) return pass.removed;
          slice(() => {
            const oldest = stmts.oldestRecords.all(t.name, p, MAINTENANCE_SLICE_ROWS);
            let n = 0;
            for (const r of oldest) {
              if (r.ts >= now - t.retention_ms) break;
              pass.removed += stmts.deleteRecord.run(t.name, p, r.offset).changes;
              if (t.compacted && r.key !== null) stmts.dropLatest.run(t.name, p, r.key, r.offset);
              n++;
            }
            expired = n === MAINTENANCE_SLICE_ROWS;
            return n;
          });
        }
      }
    }
    return pass.removed;
  }

  async openTask(spec: TaskSpec): Promise<LogTask> {
    const partitions: { topic: string; partition: number }[] = [];
    for (const topic of spec.topics) {
      const t = this.topicSpec(topic);
      for (let p = 0; p < t.partitions; p++) partitions.push({ topic, partition: p });
    }
    return new EmbeddedTask(this, spec.group, partitions);
  }

  async readStore(group: string, store: string): Promise<StoredValue[]> {
    return this.storeRows(group, store);
  }

  storeRows(group: string, store: string): StoredValue[] {
    return this.stmts.storeRows.all(group, store, store, store).map((r) => ({
      partition: r.store === store ? GLOBAL : Number(r.store.slice(store.length + 1)),
      key: r.key,
      value: r.value,
    }));
  }

  waitForAppend(ms: number): Promise<void> {
    return new Promise((resolve) => {
      // Another process may append to the same file: re-check at least every 50 ms.
      const timer = setTimeout(done, Math.min(ms, 50));
      function done() {
        clearTimeout(timer);
        self.appended.off('append', done);
        resolve();
      }
      const self = this;
      this.appended.once('append', done);
    });
  }

  async close(): Promise<void> {
    this.appended.emit('append');
    if (this.db.open) this.db.close();
  }
}

function toRecord(
  topic: string,
  partition: number,
  r: { offset: number; key: string | null; value: string; ts: number; validated_as: string | null },
): LogRecord {
  return {
    topic,
    partition,
    offset: r.offset,
    key: r.key,
    value: r.value,
    timestamp: r.ts,
    ...(r.validated_as === null ? {} : { validatedAs: r.validated_as }),
  };
}

/** Most rows one maintenance transaction touches: the longest the event loop waits for compaction. */
export const MAINTENANCE_SLICE_ROWS = 1000;

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Indexes the compacted topics of a log written before compaction_latest existed. */
const BACKFILL_COMPACTION = `
INSERT INTO compaction_latest (topic, partition, key, offset)
  SELECT r.topic, r.partition, r.key, MAX(r.offset) FROM records r JOIN topics t ON t.name = r.topic
  WHERE t.compacted = 1 AND r.key IS NOT NULL GROUP BY r.topic, r.partition, r.key;
INSERT INTO compaction_superseded (topic, partition, offset)
  SELECT r.topic, r.partition, r.offset FROM records r JOIN compaction_latest l
    ON l.topic = r.topic AND l.partition = r.partition AND l.key = r.key
  WHERE r.offset < l.offset;
`;

/**
 * What one poll takes at most, in characters of values (at least one record, however large): as a
 * Kafka fetch is bounded by fetch.max.bytes. Bounded by count alone, a poll of 256 records of
 * 10 MB values, produced by hand, would load gigabytes at once.
 */
const POLL_MAX_CHARS = 16 * 1024 * 1024;

class EmbeddedTask implements LogTask {
  /** Committed next offset per partition; the position of the next poll runs ahead of it. */
  private readonly committed = new Map<string, number>();
  private readonly position = new Map<string, number>();
  private cursor = 0;

  constructor(
    private readonly runtime: EmbeddedRuntime,
    private readonly group: string,
    private readonly partitions: readonly { topic: string; partition: number }[],
  ) {
    this.loadCommitted();
  }

  private loadCommitted(): void {
    for (const { topic, partition } of this.partitions) {
      const row = this.runtime.stmts.groupOffset.get(this.group, topic, partition);
      const k = partitionKey(topic, partition);
      this.committed.set(k, row?.next_offset ?? 0);
      this.position.set(k, row?.next_offset ?? 0);
    }
  }

  async poll(max: number, waitMs: number): Promise<LogRecord[]> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const out: LogRecord[] = [];
      let chars = 0;
      this.runtime.refreshEnds();
      // Round-robin over partitions so a busy partition cannot starve the others.
      for (let i = 0; i < this.partitions.length && out.length < max && chars < POLL_MAX_CHARS; i++) {
        const { topic, partition } = this.partitions[(this.cursor + i) % this.partitions.length]!;
        const k = partitionKey(topic, partition);
        if (!this.runtime.mayHaveFrom(topic, partition, this.position.get(k)!)) continue;
        const rows = this.runtime.readBounded(
          topic,
          partition,
          this.position.get(k)!,
          max - out.length,
          POLL_MAX_CHARS - chars,
        );
        if (rows.length) this.position.set(k, rows[rows.length - 1]!.offset + 1);
        for (const r of rows) chars += r.value.length;
        out.push(...rows);
      }
      this.cursor = (this.cursor + 1) % Math.max(1, this.partitions.length);
      if (out.length || Date.now() >= deadline || !this.runtime.db.open) return out;
      await this.runtime.waitForAppend(deadline - Date.now());
    }
  }

  readState(store: string, key: string, partition: number): string | undefined {
    return this.runtime.stmts.getState.get(this.group, storeColumn(store, partition), key)?.value;
  }

  owned(): readonly number[] {
    return [...new Set(this.partitions.map((p) => p.partition))].sort((a, b) => a - b);
  }

  async begin(): Promise<LogTransaction> {
    const staged = {
      state: [] as StateChange[],
      outputs: [] as OutgoingRecord[],
      offsets: new Map<string, Offset>(),
    };
    const { stmts } = this.runtime;
    return {
      writeChangelogs: async (changes) => void staged.state.push(...changes),
      produce: async (records) => void staged.outputs.push(...records),
      commitOffsets: async (offsets) => {
        for (const [k, v] of offsets) staged.offsets.set(k, v);
      },
      commit: async () => {
        this.runtime.db
          .transaction(() => {
            // Fencing: if another process committed this group's partitions since we read them, refuse.
            for (const [k, { topic, partition }] of staged.offsets) {
              const row = stmts.groupOffset.get(this.group, topic, partition);
              if ((row?.next_offset ?? 0) !== this.committed.get(k)) {
                throw new FencedError(`group ${this.group} moved on ${topic}/${partition} under us`);
              }
            }
            for (const c of staged.state) {
              const store = storeColumn(c.store, c.partition);
              if (c.value === null) stmts.deleteState.run(this.group, store, c.key);
              else stmts.putState.run(this.group, store, c.key, c.value);
            }
            this.runtime.appendInTransaction(staged.outputs);
            for (const { topic, partition, offset } of staged.offsets.values()) {
              stmts.setGroupOffset.run(this.group, topic, partition, offset);
            }
          })
          .immediate();
        for (const [k, { offset }] of staged.offsets) this.committed.set(k, offset);
        if (staged.outputs.length) this.runtime.notify();
      },
      abort: async () => {},
    };
  }

  async flushState(): Promise<void> {
    // State was written in the same SQLite transaction as the outputs and offsets.
  }

  async rewind(): Promise<void> {
    this.loadCommitted();
  }

  async close(): Promise<void> {}
}
