import type Database from 'better-sqlite3';
import type { FeederConfig } from '../../schemas/feeder.js';
import { DIFFICULTY_SCHEMA } from './difficulty.js';

// The feeder's own SQLite file: the item pool, the mix, runs, epochs, batches, the lease outbox and
// the rewards queue.
//
// Leases and acks are answered over HTTP, outside the processor's steps, so they are kept in a
// SQLite file of the feeder's own (WAL, one transaction per request) rather than in the
// processor's state stores: a store write becomes durable only when the step commits (up to
// commitIntervalMs later), so a lease answered before that commit would be forgotten by a crash
// and leased again to another rank, and one answered after it would cost 100 ms. A SQLite
// transaction commits in microseconds and survives kill -9. The item pool and the mix are written
// into the same file by the processor through ctx.sink (idempotent upserts, before the step
// commits), so the file never lags the processor's committed offsets. Every method below runs
// synchronously to its end: the event loop is the lock, so no two requests interleave.

export interface RunRow {
  run: string;
  world_size: number;
  /** The batch size asked last: the next epoch planned is cut in it. */
  batch_size: number;
  /** The batch size of the epoch being cut. */
  cut_size: number;
  epoch: number;
  mix_version: number | null;
  planned: number;
  base: number;
  pos: number;
  next_index: number;
  cut: number;
  acked_items: number;
  /** The latest trainer step acked: what a set-aside item's cool-down is counted against. */
  step: number;
  /** Rollouts acked, flat groups among them, times band-pass set an item aside (issue 44). */
  rollouts: number;
  flat_groups: number;
  set_aside: number;
  /** Times a set-aside item was cut into a batch for lack of a live item of its topics. */
  served_aside: number;
}

/** A batch's slots as stored: item id, copy, index in the epoch. */
export type BatchSlot = [id: string, copy: number, index: number];

export interface BatchRow {
  id: string;
  run: string;
  epoch: number;
  idx: number;
  rank: number;
  seq: number;
  mix_version: number;
  slots: string;
  state: 'ready' | 'leased' | 'acked';
  lease_id: string | null;
  deadline: number | null;
  attempts: number;
  /** The slots acked so far (a JSON array, ascending); the batch is acked when all are. */
  acked_slots: string;
  /** Why planned items were not served, and what was in their place (schemas/feeder.ts LeftOut[]). */
  left_out: string;
}

/** Opens the file's tables, migrated to this version, with rows rendered for these settings. */
export function prepareFile(db: Database.Database, config: FeederConfig): void {
  db.exec(SCHEMA);
  db.exec(DIFFICULTY_SCHEMA);
  migrate(db);
  // After migrate: a file from before article_id gets the column first. An item's prior sums its
  // article's other items' records through it.
  db.exec('CREATE INDEX IF NOT EXISTS items_by_article ON items (article_id)');
  keepRowsOf(db, config);
}

/** The feeder's prepared statements. */
export type Statements = ReturnType<typeof statements>;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS items (id TEXT PRIMARY KEY, article_id TEXT NOT NULL, topics TEXT NOT NULL, source TEXT NOT NULL, published TEXT, body TEXT NOT NULL, row TEXT);
CREATE TABLE IF NOT EXISTS withdrawn (id TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
  run TEXT PRIMARY KEY, world_size INTEGER NOT NULL, batch_size INTEGER NOT NULL, cut_size INTEGER NOT NULL, created INTEGER NOT NULL,
  epoch INTEGER NOT NULL DEFAULT -1, mix_version INTEGER, planned INTEGER NOT NULL DEFAULT 0,
  base INTEGER NOT NULL DEFAULT 0, pos INTEGER NOT NULL DEFAULT 0, next_index INTEGER NOT NULL DEFAULT 0, cut INTEGER NOT NULL DEFAULT 0,
  acked_items INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS plans (run TEXT PRIMARY KEY, plan TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rank_epochs (run TEXT NOT NULL, rank INTEGER NOT NULL, epoch INTEGER NOT NULL, PRIMARY KEY (run, rank));
CREATE TABLE IF NOT EXISTS batches (
  id TEXT PRIMARY KEY, run TEXT NOT NULL, epoch INTEGER NOT NULL, idx INTEGER NOT NULL, rank INTEGER NOT NULL,
  seq INTEGER NOT NULL, mix_version INTEGER NOT NULL, slots TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'ready',
  lease_id TEXT, deadline INTEGER, attempts INTEGER NOT NULL DEFAULT 0, acked_at INTEGER,
  acked_slots TEXT NOT NULL DEFAULT '[]');
CREATE INDEX IF NOT EXISTS batches_by_rank ON batches (run, rank, epoch, state, idx);
CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, batch_id TEXT NOT NULL, lease_id TEXT NOT NULL, deadline INTEGER NOT NULL, attempt INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS reward_queue (seq INTEGER PRIMARY KEY AUTOINCREMENT, rows TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS epochs (
  run TEXT NOT NULL, epoch INTEGER NOT NULL, batch_size INTEGER NOT NULL, planned INTEGER NOT NULL,
  acked INTEGER NOT NULL DEFAULT 0, rewarded INTEGER NOT NULL DEFAULT 0, redelivered INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (run, epoch));
`;

/** Columns added since the first feeder files: a file written before them gets them, empty. */
function migrate(db: Database.Database): void {
  const columns = (table: string) =>
    new Set((db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((c) => c.name));
  if (!columns('runs').has('cut_size'))
    db.exec(
      'ALTER TABLE runs ADD COLUMN cut_size INTEGER NOT NULL DEFAULT 0; UPDATE runs SET cut_size = batch_size',
    );
  if (!columns('batches').has('acked_slots'))
    db.exec("ALTER TABLE batches ADD COLUMN acked_slots TEXT NOT NULL DEFAULT '[]'");
  if (!columns('runs').has('step')) db.exec('ALTER TABLE runs ADD COLUMN step INTEGER NOT NULL DEFAULT 0');
  if (!columns('runs').has('rollouts'))
    db.exec('ALTER TABLE runs ADD COLUMN rollouts INTEGER NOT NULL DEFAULT 0');
  if (!columns('runs').has('flat_groups'))
    db.exec('ALTER TABLE runs ADD COLUMN flat_groups INTEGER NOT NULL DEFAULT 0');
  if (!columns('runs').has('set_aside'))
    db.exec('ALTER TABLE runs ADD COLUMN set_aside INTEGER NOT NULL DEFAULT 0');
  if (!columns('runs').has('served_aside'))
    db.exec('ALTER TABLE runs ADD COLUMN served_aside INTEGER NOT NULL DEFAULT 0');
  if (!columns('batches').has('left_out'))
    db.exec("ALTER TABLE batches ADD COLUMN left_out TEXT NOT NULL DEFAULT '[]'");
  if (!columns('items').has('row')) db.exec('ALTER TABLE items ADD COLUMN row TEXT');
  if (!columns('items').has('article_id'))
    db.exec(
      `ALTER TABLE items ADD COLUMN article_id TEXT NOT NULL DEFAULT ''; UPDATE items SET article_id = coalesce(json_extract(body, '$.articleId'), '')`,
    );
}

/**
 * Rows are stored rendered with the settings they were rendered with (templates, data source,
 * ability): a file opened with other settings forgets them, and each is rendered again from its
 * item the first time a batch needs it.
 */
function keepRowsOf(db: Database.Database, config: FeederConfig): void {
  const settings = JSON.stringify([config.templates, config.dataSource, config.ability]);
  const held = db.prepare(`SELECT value FROM meta WHERE key = 'row-settings'`).get() as
    | { value: string }
    | undefined;
  if (held?.value === settings) return;
  db.transaction(() => {
    db.exec('UPDATE items SET row = NULL');
    db.prepare(
      `INSERT INTO meta (key, value) VALUES ('row-settings', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
    ).run(settings);
  })();
}

// Placeholders of a stored row (the feeder's rowOf): no item's own text can hold them, since a
// quote inside a JSON string is escaped.
export const INDEX_MARK = Number.MAX_SAFE_INTEGER;
export const COPY_MARK = Number.MAX_SAFE_INTEGER - 1;
export const AT_INDEX = `"index":${INDEX_MARK}`;
export const AT_COPY = `"copy":${COPY_MARK}`;

/** The prepared statements every request of the feeder runs. */
export function statements(db: Database.Database) {
  const p = (sql: string) => db.prepare(sql);
  return {
    putItem: p(
      `INSERT INTO items (id, article_id, topics, source, published, body, row) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET article_id = excluded.article_id, topics = excluded.topics, source = excluded.source,
       published = excluded.published, body = excluded.body, row = excluded.row`,
    ),
    getItem: p('SELECT body FROM items WHERE id = ?'),
    getRow: p('SELECT row FROM items WHERE id = ?'),
    putRow: p('UPDATE items SET row = ? WHERE id = ?'),
    // The pool is the items not withdrawn (qa.withdrawn), whichever of the two came first.
    itemsAfter: p(
      `SELECT id, article_id, topics, source, published FROM items
       WHERE id > ? AND NOT EXISTS (SELECT 1 FROM withdrawn w WHERE w.id = items.id) ORDER BY id LIMIT ?`,
    ),
    poolSize: p(
      'SELECT count(*) AS n FROM items WHERE NOT EXISTS (SELECT 1 FROM withdrawn w WHERE w.id = items.id)',
    ),
    putWithdrawn: p('INSERT OR IGNORE INTO withdrawn (id) VALUES (?)'),
    getMeta: p('SELECT value FROM meta WHERE key = ?'),
    putMeta: p(
      'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
    ),
    getRun: p('SELECT * FROM runs WHERE run = ?'),
    runNames: p('SELECT run FROM runs ORDER BY run'),
    anyRun: p('SELECT 1 FROM runs LIMIT 1'),
    insertRun: p('INSERT INTO runs (run, world_size, batch_size, cut_size, created) VALUES (?, ?, ?, ?, ?)'),
    setBatchSize: p('UPDATE runs SET batch_size = ? WHERE run = ?'),
    newEpoch: p(
      'UPDATE runs SET epoch = ?, mix_version = ?, planned = ?, base = 0, pos = 0, next_index = 0, cut_size = batch_size WHERE run = ?',
    ),
    insertEpoch: p(
      `INSERT INTO epochs (run, epoch, batch_size, planned) SELECT run, epoch, cut_size, planned FROM runs WHERE run = @run AND epoch = @epoch
       ON CONFLICT (run, epoch) DO UPDATE SET batch_size = excluded.batch_size, planned = excluded.planned`,
    ),
    epochPlanned: p(
      'UPDATE epochs SET planned = (SELECT planned FROM runs WHERE run = @run) WHERE run = @run AND epoch = @epoch',
    ),
    epochAcked: p('UPDATE epochs SET acked = acked + ?, rewarded = rewarded + ? WHERE run = ? AND epoch = ?'),
    addRedelivered: p('UPDATE epochs SET redelivered = redelivered + ? WHERE run = ? AND epoch = ?'),
    epochStats: p('SELECT * FROM epochs WHERE run = ? ORDER BY epoch'),
    // base + pos items of the epoch are cut; the new plan holds what is left.
    replan: p(
      'UPDATE runs SET mix_version = @version, base = base + pos, planned = base + pos + @left, pos = 0 WHERE run = @run',
    ),
    advance: p('UPDATE runs SET pos = ?, next_index = ?, cut = ? WHERE run = ?'),
    addAcked: p('UPDATE runs SET acked_items = acked_items + ? WHERE run = ?'),
    getPlan: p('SELECT plan FROM plans WHERE run = ?'),
    putPlan: p(
      'INSERT INTO plans (run, plan) VALUES (?, ?) ON CONFLICT (run) DO UPDATE SET plan = excluded.plan',
    ),
    getRankEpoch: p('SELECT epoch FROM rank_epochs WHERE run = ? AND rank = ?'),
    setRankEpoch: p(
      'INSERT INTO rank_epochs (run, rank, epoch) VALUES (?, ?, ?) ON CONFLICT (run, rank) DO UPDATE SET epoch = excluded.epoch',
    ),
    insertBatch: p(
      'INSERT INTO batches (id, run, epoch, idx, rank, seq, mix_version, slots, left_out) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    setRunStep: p('UPDATE runs SET step = max(step, ?) WHERE run = ?'),
    addDifficulty: p(
      'UPDATE runs SET rollouts = rollouts + ?, flat_groups = flat_groups + ?, set_aside = set_aside + ? WHERE run = ?',
    ),
    addServedAside: p('UPDATE runs SET served_aside = served_aside + ? WHERE run = ?'),
    difficultyTotals: p(
      'SELECT run, set_aside AS setAside, flat_groups AS flat, rollouts, served_aside AS servedAside FROM runs ORDER BY run',
    ),
    getBatch: p('SELECT * FROM batches WHERE id = ?'),
    batchesOfEpoch: p('SELECT slots FROM batches WHERE run = ? AND epoch = ? ORDER BY idx'),
    // What was delivered before (released, or its lease expired), of any epoch up to the rank's,
    // comes first; then the epoch's fresh batches in order.
    nextForRank: p(
      `SELECT * FROM batches WHERE run = ? AND rank = ? AND epoch <= ?
       AND (state = 'ready' OR (state = 'leased' AND deadline < ?)) ORDER BY attempts = 0, epoch, idx LIMIT 1`,
    ),
    readyList: p(
      `SELECT * FROM batches WHERE run = ? AND rank = ? AND epoch = ? AND state = 'ready' ORDER BY idx LIMIT ?`,
    ),
    readyForRank: p(
      `SELECT count(*) AS n FROM batches WHERE run = ? AND rank = ? AND epoch = ? AND state = 'ready'`,
    ),
    heldBefore: p(
      `SELECT count(*) AS n, min(deadline) AS first FROM batches
       WHERE run = ? AND rank = ? AND epoch < ? AND state = 'leased' AND deadline >= ?`,
    ),
    leaseBatch: p(
      `UPDATE batches SET state = 'leased', lease_id = ?, deadline = ?, attempts = ? WHERE id = ?`,
    ),
    ackSlots: p('UPDATE batches SET acked_slots = @acked, state = @state, acked_at = @at WHERE id = @id'),
    release: p(`UPDATE batches SET state = 'ready', lease_id = NULL, deadline = NULL WHERE id = ?`),
    extend: p('UPDATE batches SET deadline = ? WHERE id = ?'),
    batchCounts: p(
      `SELECT sum(state = 'ready' OR (state = 'leased' AND deadline < ?)) AS ready,
              sum(state = 'leased' AND deadline >= ?) AS leased, sum(state = 'acked') AS acked,
              sum(max(attempts - 1, 0)) AS redelivered
       FROM batches WHERE run = ?`,
    ),
    rankCounts: p(
      `SELECT sum(state = 'leased' AND deadline >= ?) AS leased, sum(state = 'acked') AS acked
       FROM batches WHERE run = ? AND rank = ?`,
    ),
    outbox: p('INSERT INTO outbox (batch_id, lease_id, deadline, attempt) VALUES (?, ?, ?, ?)'),
    outboxAfter: p('SELECT * FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?'),
    dropOutbox: p('DELETE FROM outbox WHERE seq <= ?'),
    queueRewards: p('INSERT INTO reward_queue (rows) VALUES (?)'),
    rewardsQueued: p('SELECT * FROM reward_queue ORDER BY seq LIMIT ?'),
    dropRewards: p('DELETE FROM reward_queue WHERE seq <= ?'),
  };
}

/** The slots of a batch acked so far. */
export function ackedSlots(b: BatchRow): number[] {
  return JSON.parse(b.acked_slots) as number[];
}
