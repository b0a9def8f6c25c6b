import { readdirSync, readFileSync, statSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import * as parquet from 'parquet-wasm/node';
import { z } from 'zod';
import { normaliseDoi } from '../../schemas/ids.js';
import type { EvalMatch, QaCandidate } from '../../schemas/qa.js';
import { MINHASH, normaliseText, signature, similarity } from '../../sources/minhash.js';

/**
 * Benchmark decontamination as a stage (issue 23): grade refuses a candidate that shares a word
 * 13-gram with an eval item's question and options (the GPT-3 / Llama 2 rule), or whose question
 * is a MinHash near-duplicate of an eval item's (near-duplicates.ts, grade's own), and every
 * candidate of an article that an eval item names as its source (PMID or DOI). Eval sets are
 * files of JSON lines or parquet; a folder stands for every such file in it, so a set dropped
 * into it while the pipeline runs applies to the candidates graded from then on.
 */

/** Words in the n-grams two texts must share (GPT-3's 13). */
export const GRAM_WORDS = 13;

const Id = z.union([z.string().trim().min(1), z.number()]).transform(String);

/** One benchmark item as an eval set file holds it; other fields are ignored. */
export const EvalItem = z.object({
  id: Id,
  question: z.string('an eval item needs a question').trim().min(1, 'an eval item needs a question'),
  options: z
    .union([z.array(z.string()), z.record(z.string(), z.string())])
    .nullish()
    .transform((o) => (o == null ? [] : Array.isArray(o) ? o : Object.values(o)))
    .describe('a list, or {"A": ..., "B": ...}'),
  pmid: Id.nullish().describe('the PubMed id of the article the item was made from'),
  doi: z.string().trim().min(1).nullish(),
});
export type EvalItem = z.infer<typeof EvalItem>;

/** A set as loaded: its items and what its file held that is no item, counted. */
export interface EvalSet {
  readonly name: string;
  readonly path: string;
  readonly bytes: number;
  readonly mtimeMs: number;
  readonly items: readonly EvalItem[];
  /** Records that are no item (not JSON, no question, no id): counted, the first few named. */
  readonly refused: { readonly count: number; readonly first: readonly string[] };
}

export class EvalSetError extends Error {}

const EVAL_SET_EXTENSIONS = ['.jsonl', '.ndjson', '.json', '.parquet'];

/**
 * An eval set's items from its bytes: parquet (by its magic) or JSON lines. A file that is
 * neither, or that holds no item with a question, is an error; records that are no item are
 * counted in `refused` (a warning), never dropped unsaid.
 */
export function parseEvalSet(path: string, bytes: Buffer, mtimeMs = 0): EvalSet {
  return runToEnd(parsing(path, bytes, mtimeMs));
}

/** parseEvalSet, yielding to the event loop between slices of SLICE_MS: a reload while steps run. */
export function parseEvalSetYielding(path: string, bytes: Buffer, mtimeMs = 0): Promise<EvalSet> {
  return runYielding(parsing(path, bytes, mtimeMs));
}

/** Work that yields between slices: run to its end at once (start-up), or a macrotask apart (reloads). */
type Slices<T> = Generator<void, T>;

/**
 * The work a reload does between two yields, in ms: well under the ~50 ms a step may wait on the
 * event loop. Slices are cut by time, not by a count of items: an item costs 40-300 µs as the
 * shared cores swing, and a count that fits on an idle machine stalled the loop under load.
 */
const SLICE_MS = 5;

/** Where a piece of sliced work stands in its slice; one clock is shared by the generators of one piece. */
class SliceClock {
  private endsAt = performance.now() + SLICE_MS;

  /** `yield* clock.pause()` yields once the slice's time is up; the next slice starts on resumption. */
  *pause(): Slices<void> {
    if (performance.now() < this.endsAt) return;
    yield;
    this.endsAt = performance.now() + SLICE_MS;
  }
}

function runToEnd<T>(work: Slices<T>): T {
  for (;;) {
    const step = work.next();
    if (step.done) return step.value;
  }
}

async function runYielding<T>(work: Slices<T>): Promise<T> {
  for (;;) {
    const step = work.next();
    if (step.done) return step.value;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

function* parsing(path: string, bytes: Buffer, mtimeMs: number): Slices<EvalSet> {
  const name = basename(path, extname(path));
  const clock = new SliceClock();
  const items: EvalItem[] = [];
  const refused = { count: 0, first: [] as string[] };
  const refuse = (why: string) => {
    if (refused.count++ < 5) refused.first.push(why);
  };
  // Each record is checked as it is read, so only items outlive their record: fewer survivors
  // for the young generation's collections, which a reload's allocations set off.
  const take = ({ at, value }: RawRecord) => {
    if (value instanceof Error) return refuse(`${at}: ${value.message}`);
    const parsed = EvalItem.safeParse(value);
    if (parsed.success) items.push(parsed.data);
    else
      refuse(
        `${at}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(item)'}: ${i.message}`).join('; ')}`,
      );
  };
  const records = isParquet(bytes)
    ? yield* parquetRecords(path, bytes, clock, take)
    : yield* jsonLines(path, bytes, clock, take);
  if (items.length === 0)
    throw new EvalSetError(
      `eval set ${path}: no item with an id and a question among ${records} records${refused.count ? ` (${refused.first.slice(0, 3).join('; ')})` : ''}`,
    );
  return { name, path, bytes: bytes.length, mtimeMs, items, refused };
}

function isParquet(bytes: Buffer): boolean {
  return (
    bytes.length >= 8 &&
    bytes.subarray(0, 4).toString('latin1') === 'PAR1' &&
    bytes.subarray(-4).toString('latin1') === 'PAR1'
  );
}

type RawRecord = { at: string; value: unknown };

/** Hands each row to `take`; returns how many there were. */
function* parquetRecords(
  path: string,
  bytes: Buffer,
  clock: SliceClock,
  take: (record: RawRecord) => void,
): Slices<number> {
  let table: ReturnType<typeof tableFromIPC>;
  // The decoding is one call into wasm; the rows' conversion, most of the work, is sliced.
  try {
    table = tableFromIPC(parquet.readParquet(bytes).intoIPCStream());
  } catch (e) {
    throw new EvalSetError(`eval set ${path}: unreadable parquet: ${(e as Error).message}`);
  }
  for (let i = 0; i < table.numRows; i++) {
    yield* clock.pause();
    take({ at: `row ${i + 1}`, value: plain(table.get(i)) });
  }
  return table.numRows;
}

/** Arrow rows (and their list / struct cells) as plain JSON values, so zod reads them like JSON lines. */
function plain(value: unknown): unknown {
  if (value && typeof value === 'object' && 'toJSON' in value && typeof value.toJSON === 'function')
    return plain(value.toJSON());
  if (Array.isArray(value)) return value.map(plain);
  if (typeof value === 'bigint') return Number(value);
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
}

/** Hands each record (a JSON value, or the Error that its line is not JSON) to `take`; returns how many there were. */
function* jsonLines(
  path: string,
  bytes: Buffer,
  clock: SliceClock,
  take: (record: RawRecord) => void,
): Slices<number> {
  let records = 0;
  // Line by line off the bytes: the whole file as one string, split, took tens of ms in one go.
  // A newline byte is never inside a UTF-8 sequence, so each line decodes alone.
  for (let i = 0, start = 0; start < bytes.length; i++) {
    yield* clock.pause();
    const newline = bytes.indexOf(10, start);
    const end = newline === -1 ? bytes.length : newline;
    const line = bytes.toString('utf8', start, end);
    start = end + 1;
    if (!line.trim()) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (e) {
      value = new Error(`not JSON (${(e as Error).message})`);
    }
    // The first record decides what the file is: a file that does not start with a JSON object
    // is no JSON lines file (a CSV, a JSON array, a binary), an error rather than all-refused.
    if (
      records === 0 &&
      (value instanceof Error || typeof value !== 'object' || value === null || Array.isArray(value))
    )
      throw new EvalSetError(
        `eval set ${path}: neither JSON lines (one {"id", "question", ...} object a line) nor parquet: line ${i + 1} is ${value instanceof Error ? value.message : Array.isArray(value) ? 'a JSON array' : `a JSON ${typeof value}`}`,
      );
    records++;
    take({ at: `line ${i + 1}`, value });
  }
  return records;
}

/** The words of a text as the 13-gram check sees them: grade's question normalisation. */
function words(text: string): string[] {
  const n = normaliseText(text);
  return n ? n.split(' ') : [];
}

/** The words of a normalised text (single spaces between words), counted without splitting it. */
function wordCount(normalised: string): number {
  if (!normalised) return 0;
  let n = 1;
  for (let i = 0; i < normalised.length; i++) if (normalised.charCodeAt(i) === 32) n++;
  return n;
}

/** What the gram check reads of a question: the question and its options, one text. */
function gramText(question: string, options: readonly string[]): string {
  return [question, ...options].join(' ');
}

/** 32-bit FNV-1a of a word. */
function wordHash(word: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < word.length; i++) {
    h ^= word.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * The 13-grams of a word list as 64-bit keys (two independent 32-bit folds of the words' hashes),
 * far cheaper to hold than the 13 words as a string. A hit is checked on the item's words, so a
 * hash collision never rejects a candidate.
 */
function gramKeys(
  ws: readonly string[],
  each: (hi: number, lo: number, at: number) => boolean | undefined,
): void {
  if (ws.length < GRAM_WORDS) return;
  const hs = ws.map(wordHash);
  for (let at = 0; at + GRAM_WORDS <= hs.length; at++) {
    let a = 0x12345678;
    let b = 0x9abcdef0;
    for (let k = at; k < at + GRAM_WORDS; k++) {
      a = (Math.imul(a ^ hs[k]!, 0x01000193) + k - at) >>> 0;
      b = Math.imul(b ^ hs[k]!, 0x5bd1e995) >>> 0;
      b ^= b >>> 15;
    }
    if (each(a, b, at)) return;
  }
}

/** One eval item in the index. */
interface Entry {
  readonly set: string;
  readonly id: string;
  /** Its normalised gram text between spaces, to confirm a shared 13-gram. */
  readonly text: string;
}

/**
 * A hash table from 64-bit keys (two uint32 halves) to an item's ref, on typed arrays with linear
 * probing: millions of 13-grams fit in tens of MB, where a Map of them would take hundreds.
 */
class RefTable {
  private hi: Uint32Array;
  private lo: Uint32Array;
  /** ref + 1 per slot, 0 where empty: a new table is all empty as allocated, with no fill to wait for. */
  private refs: Int32Array;
  private count = 0;

  constructor(capacity = 1 << 12) {
    this.hi = new Uint32Array(capacity);
    this.lo = new Uint32Array(capacity);
    this.refs = new Int32Array(capacity);
  }

  private slot(hi: number, lo: number): number {
    const mask = this.refs.length - 1;
    let i = (Math.imul(hi ^ (lo >>> 7), 0x9e3779b1) ^ lo) & mask;
    while (this.refs[i] !== 0 && (this.hi[i] !== hi || this.lo[i] !== lo)) i = (i + 1) & mask;
    return i;
  }

  /** The ref under the key, -1 if none. */
  get(hi: number, lo: number): number {
    return this.refs[this.slot(hi, lo)]! - 1;
  }

  /** Puts `ref` under the key and returns the ref it replaced (-1 if none), in room reserved before. */
  swap(hi: number, lo: number, ref: number): number {
    if ((this.count + 1) * 4 > this.refs.length * 3) throw new Error('RefTable: no room reserved for a key');
    const i = this.slot(hi, lo);
    const before = this.refs[i]! - 1;
    if (before === -1) this.count++;
    this.hi[i] = hi;
    this.lo[i] = lo;
    this.refs[i] = ref + 1;
    return before;
  }

  /**
   * Room for `more` keys, grown to it in one step and the keys held moved over in slices: grown a
   * doubling at a time as keys came, the last moves of millions of keys held the loop ~0.15 s each.
   */
  *reserving(more: number, clock: SliceClock): Slices<void> {
    let capacity = this.refs.length;
    while ((this.count + more) * 4 > capacity * 3) capacity *= 2;
    if (capacity === this.refs.length) return;
    const { hi, lo, refs } = this;
    this.hi = new Uint32Array(capacity);
    this.lo = new Uint32Array(capacity);
    this.refs = new Int32Array(capacity);
    for (let i = 0; i < refs.length; i++) {
      if ((i & 0xfff) === 0) yield* clock.pause();
      if (refs[i] === 0) continue;
      const j = this.slot(hi[i]!, lo[i]!);
      this.hi[j] = hi[i]!;
      this.lo[j] = lo[i]!;
      this.refs[j] = refs[i]!;
    }
  }
}

const { hashes: HASHES, bands: BANDS, rows: ROWS } = MINHASH;

/** The key of a signature's band `b`: two 32-bit folds of its rows, seeded by the band. */
function bandKey(sig: ArrayLike<number>, b: number): [number, number] {
  let hi = Math.imul(b + 1, 0x85ebca6b) >>> 0;
  let lo = Math.imul(b + 1, 0xc2b2ae35) >>> 0;
  for (let r = b * ROWS; r < (b + 1) * ROWS; r++) {
    hi = Math.imul(hi ^ sig[r]!, 0x01000193) >>> 0;
    lo = Math.imul((lo ^ sig[r]!) + r, 0x5bd1e995) >>> 0;
    lo ^= lo >>> 15;
  }
  return [hi, lo];
}

/**
 * Every loaded eval set as one index: 13-grams of each item's question+options, MinHash band keys
 * of its question, and its source ids. Built once per change of the sets; check() is pure.
 */
export class EvalIndex {
  private readonly entries: Entry[] = [];
  /** 13-gram -> the first item holding it. */
  private readonly grams = new RefTable();
  /** Band key -> the last item with it; `bandNext[ref * BANDS + b]` chains to the one before. */
  private readonly bands = new RefTable();
  private bandNext = new Int32Array(0);
  private signatures = new Uint32Array(0);
  private readonly sources = new Map<string, number[]>();
  private readonly perSet = new Map<string, { items: number; sources: number }>();

  constructor(private readonly threshold: number) {}

  /** Items indexed, all sets together. */
  get size(): number {
    return this.entries.length;
  }

  /** Each set's name with its item and source-id counts. */
  get sets(): ReadonlyMap<string, { items: number; sources: number }> {
    return this.perSet;
  }

  /** Adds a set's items at once. */
  add(set: EvalSet): void {
    runToEnd(this.adding(set));
  }

  /** Adds a set's items a slice at a time, leaving the event loop to the steps in between. */
  addYielding(set: EvalSet): Promise<void> {
    return runYielding(this.adding(set));
  }

  private *adding(set: EvalSet): Slices<void> {
    const clock = new SliceClock();
    // Each item's normalised gram text, and from its words an upper bound of the keys the tables
    // will hold: room is made once, before the items go in (see RefTable.reserving). The texts are
    // kept, not their word lists: millions of words outliving a slice make every young-generation
    // collection of the reload slower.
    const texts: string[] = [];
    let gramCount = 0;
    for (const item of set.items) {
      yield* clock.pause();
      const text = normaliseText(gramText(item.question, item.options));
      texts.push(text);
      gramCount += Math.max(0, wordCount(text) - GRAM_WORDS + 1);
    }
    yield* this.grams.reserving(gramCount, clock);
    yield* this.bands.reserving(set.items.length * BANDS, clock);
    const first = this.entries.length;
    const sigs = new Uint32Array((first + set.items.length) * HASHES);
    sigs.set(this.signatures);
    this.signatures = sigs;
    const next = new Int32Array((first + set.items.length) * BANDS);
    next.set(this.bandNext);
    this.bandNext = next;
    let sourced = 0;
    for (const [i, item] of set.items.entries()) {
      yield* clock.pause();
      const ref = first + i;
      const text = texts[i]!;
      const ws = text ? text.split(' ') : [];
      this.entries.push({ set: set.name, id: item.id, text: ` ${text} ` });
      gramKeys(ws, (hi, lo) => {
        if (this.grams.get(hi, lo) === -1) this.grams.swap(hi, lo, ref);
        return undefined;
      });
      const sig = signature(normaliseText(item.question));
      this.signatures.set(sig, ref * HASHES);
      for (let b = 0; b < BANDS; b++) {
        const [hi, lo] = bandKey(sig, b);
        this.bandNext[ref * BANDS + b] = this.bands.swap(hi, lo, ref);
      }
      const ids = sourceKeys(item);
      if (ids.length) sourced++;
      for (const id of ids) {
        const refs = this.sources.get(id);
        if (refs) refs.push(ref);
        else this.sources.set(id, [ref]);
      }
    }
    this.perSet.set(set.name, { items: set.items.length, sources: sourced });
  }

  /**
   * The eval items a candidate matches: its article as an item's source (eval-source), a 13-gram
   * shared with an item, or a near-duplicate question (contaminated). At most one match per code
   * and set, the first found, so a record names what to look at without listing a whole set.
   */
  check(
    c: Pick<QaCandidate, 'question' | 'articleId' | 'provenance'> & { options?: readonly string[] },
  ): EvalMatch[] {
    if (this.entries.length === 0) return [];
    const matches: EvalMatch[] = [];
    const seen = new Set<string>();
    const add = (ref: number, m: Omit<EvalMatch, 'evalSet' | 'itemId'>) => {
      const e = this.entries[ref]!;
      const key = `${m.code}\u0000${e.set}`;
      if (seen.has(key)) return;
      seen.add(key);
      matches.push({ ...m, evalSet: e.set, itemId: e.id });
    };
    for (const id of candidateSourceKeys(c))
      for (const ref of this.sources.get(id) ?? [])
        add(ref, { code: 'eval-source', how: id.startsWith('pmid:') ? 'pmid' : 'doi', evidence: id });
    const ws = words(gramText(c.question, c.options ?? []));
    gramKeys(ws, (hi, lo, at) => {
      const ref = this.grams.get(hi, lo);
      if (ref === -1) return undefined;
      const gram = ws.slice(at, at + GRAM_WORDS).join(' ');
      // Confirmed on the item's words: a 64-bit collision must not reject anyone.
      if (this.entries[ref]!.text.includes(` ${gram} `))
        add(ref, { code: 'contaminated', how: '13-gram', evidence: gram });
      return undefined;
    });
    const sig = signature(normaliseText(c.question));
    const compared = new Set<number>();
    for (let b = 0; b < BANDS; b++)
      for (let ref = this.bands.get(...bandKey(sig, b)); ref !== -1; ref = this.bandNext[ref * BANDS + b]!) {
        if (compared.has(ref)) continue;
        compared.add(ref);
        const s = similarity(sig, this.signatures.subarray(ref * HASHES, (ref + 1) * HASHES));
        if (s >= this.threshold)
          add(ref, {
            code: 'contaminated',
            how: 'near-duplicate',
            evidence: `${Math.round(s * 100)}% similar`,
          });
      }
    return matches;
  }
}

/** An item's source ids as article ids spell them (schemas/ids.ts): `pmid:123`, `doi:10.1/x`. */
function sourceKeys(item: EvalItem): string[] {
  const keys: string[] = [];
  if (item.pmid) keys.push(`pmid:${item.pmid.trim()}`);
  if (item.doi) keys.push(`doi:${normaliseDoi(item.doi)}`);
  return keys;
}

/** A candidate's article ids: its article id, the PMID and DOI its provenance carries, and its work's. */
function candidateSourceKeys(c: Pick<QaCandidate, 'articleId' | 'provenance'>): string[] {
  const keys = new Set([c.articleId]);
  if (c.provenance.pmid) keys.add(`pmid:${c.provenance.pmid.trim()}`);
  if (c.provenance.doi) keys.add(`doi:${normaliseDoi(c.provenance.doi)}`);
  for (const id of c.provenance.workIds) keys.add(id);
  return [...keys];
}

/** What the watcher tells the processor to log: loads, warnings with counts, and errors. */
export interface EvalSetNotice {
  readonly level: 'info' | 'warn' | 'error';
  readonly msg: string;
}

export interface EvalSetsOptions {
  /** Files of eval sets, or folders whose .jsonl/.ndjson/.json/.parquet files each are one. */
  readonly paths: readonly string[];
  /** MinHash similarity of questions at which a candidate is a near-duplicate of an item. */
  readonly threshold: number;
  /** Largest eval set file read, in bytes. */
  readonly maxBytes: number;
  /** Least time between two looks at the files' modification times. */
  readonly pollMs: number;
}

/** An eval set's file at a look: its path and modification time. */
interface FileStamp {
  readonly path: string;
  readonly mtimeMs: number;
  readonly size: number;
}

/** Sets larger than this are loaded with a warning: they take seconds and memory. */
const LARGE_SET_BYTES = 16 * 1024 * 1024;

/**
 * The eval sets of grade.evalSets, kept current: the first load is synchronous (a bad set stops
 * the pipeline at start with its error), then `current()` looks at the files' modification times
 * at most every pollMs and rebuilds the index when a set was added, changed or removed. Candidates
 * asking while a rebuild is on wait for it, so a set applies to every candidate graded after its
 * file changed was seen. A set whose new version fails to load keeps its previous version (and
 * an error is logged): a broken file never lets a contaminated candidate through.
 */
export class EvalSets {
  private index: EvalIndex;
  private loaded = new Map<string, EvalSet>();
  private lookedAt = Date.now();
  private looking: Promise<EvalIndex> | null = null;
  private readonly notices: EvalSetNotice[] = [];
  /** The modification stamp of each file whose version failed to load. */
  private readonly failed = new Map<string, string>();

  constructor(private readonly opts: EvalSetsOptions) {
    for (const file of this.filesSync()) {
      if (file.size > opts.maxBytes) throw new EvalSetError(tooLarge(file, opts.maxBytes));
      const set = parseEvalSet(file.path, readFileSync(file.path), file.mtimeMs);
      this.loaded.set(file.path, set);
    }
    assertDistinctNames([...this.loaded.values()]);
    this.index = new EvalIndex(opts.threshold);
    for (const set of this.loaded.values()) {
      this.index.add(set);
      this.noteLoaded(set);
    }
  }

  /** The index to check a candidate against now, after any change of the files seen by this look. */
  current(): Promise<EvalIndex> | EvalIndex {
    if (this.looking) return this.looking;
    if (this.opts.paths.length === 0 || Date.now() - this.lookedAt < this.opts.pollMs) return this.index;
    this.lookedAt = Date.now();
    this.looking = this.look().finally(() => {
      this.looking = null;
      this.lookedAt = Date.now();
    });
    return this.looking;
  }

  /** Notices since the last call, for the processor to log. */
  drainNotices(): EvalSetNotice[] {
    return this.notices.splice(0);
  }

  private async look(): Promise<EvalIndex> {
    let files: FileStamp[];
    try {
      files = await this.files();
    } catch (e) {
      this.notices.push({ level: 'error', msg: `eval sets: ${(e as Error).message}; the loaded sets stay` });
      return this.index;
    }
    const next = new Map<string, EvalSet>();
    let changed = files.length !== this.loaded.size;
    for (const file of files) {
      const before = this.loaded.get(file.path);
      if (before && before.mtimeMs === file.mtimeMs && before.bytes === file.size) {
        next.set(file.path, before);
        continue;
      }
      // A version that failed already is told once, not at every look, until the file changes.
      const stamp = `${file.mtimeMs}:${file.size}`;
      if (this.failed.get(file.path) === stamp) {
        if (before) next.set(file.path, before);
        continue;
      }
      changed = true;
      try {
        if (file.size > this.opts.maxBytes) throw new EvalSetError(tooLarge(file, this.opts.maxBytes));
        const set = await parseEvalSetYielding(file.path, await readFile(file.path), file.mtimeMs);
        next.set(file.path, set);
        this.failed.delete(file.path);
        this.noteLoaded(set);
      } catch (e) {
        this.failed.set(file.path, stamp);
        this.notices.push({
          level: 'error',
          msg: `${(e as Error).message}${before ? '; its previous version stays in force' : '; not applied'}`,
        });
        if (before) next.set(file.path, before);
      }
    }
    // A removed file's set stops applying (the operator took it away); say so.
    for (const path of this.loaded.keys())
      if (!next.has(path) && !files.some((f) => f.path === path))
        this.notices.push({ level: 'warn', msg: `eval set ${path} is gone: its items no longer apply` });
    if (!changed) return this.index;
    try {
      assertDistinctNames([...next.values()]);
    } catch (e) {
      this.notices.push({ level: 'error', msg: `${(e as Error).message}; the loaded sets stay` });
      return this.index;
    }
    // Only new sets: added to the index in force (a rebuild would index the old ones again).
    // The candidates that asked wait for the whole of it, so none sees a set half indexed.
    const kept = [...this.loaded.entries()].every(([path, set]) => next.get(path) === set);
    const index = kept ? this.index : new EvalIndex(this.opts.threshold);
    for (const [path, set] of next) if (!kept || !this.loaded.has(path)) await index.addYielding(set);
    this.loaded = next;
    this.index = index;
    return index;
  }

  private noteLoaded(set: EvalSet): void {
    const counts = `${set.items.length} items${set.refused.count ? `, ${set.refused.count} records refused (${set.refused.first.join('; ')})` : ''}`;
    if (set.refused.count)
      this.notices.push({ level: 'warn', msg: `eval set ${set.name} (${set.path}): ${counts}` });
    else if (set.bytes > LARGE_SET_BYTES)
      this.notices.push({
        level: 'warn',
        msg: `eval set ${set.name} (${set.path}) is large: ${(set.bytes / 2 ** 20).toFixed(1)} MB, ${counts}`,
      });
    else this.notices.push({ level: 'info', msg: `eval set ${set.name} loaded: ${counts}` });
  }

  private filesSync(): FileStamp[] {
    return this.opts.paths.flatMap((path) => {
      const s = statOrThrow(path);
      if (!s.isDirectory()) return [{ path, mtimeMs: s.mtimeMs, size: s.size }];
      return readdirSync(path)
        .filter((f) => EVAL_SET_EXTENSIONS.includes(extname(f)))
        .sort()
        .map((f) => {
          const fs = statSync(join(path, f));
          return { path: join(path, f), mtimeMs: fs.mtimeMs, size: fs.size };
        });
    });
  }

  private async files(): Promise<FileStamp[]> {
    const out: FileStamp[] = [];
    for (const path of this.opts.paths) {
      const s = await stat(path);
      if (!s.isDirectory()) {
        out.push({ path, mtimeMs: s.mtimeMs, size: s.size });
        continue;
      }
      for (const f of (await readdir(path)).filter((f) => EVAL_SET_EXTENSIONS.includes(extname(f))).sort()) {
        const fs = await stat(join(path, f));
        out.push({ path: join(path, f), mtimeMs: fs.mtimeMs, size: fs.size });
      }
    }
    return out;
  }
}

function statOrThrow(path: string) {
  try {
    return statSync(path);
  } catch (e) {
    throw new EvalSetError(
      `eval set ${path}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file or folder' : (e as Error).message}`,
    );
  }
}

function tooLarge(file: FileStamp, maxBytes: number): string {
  return `eval set ${file.path}: ${(file.size / 2 ** 20).toFixed(1)} MB, over grade.evalSetMaxMb (${(maxBytes / 2 ** 20).toFixed(0)} MB): raise it to load the set`;
}

/** Rejections name a set by its file's base name, so two files of one name would be one set. */
function assertDistinctNames(sets: readonly EvalSet[]): void {
  const byName = new Map<string, string>();
  for (const s of sets) {
    const other = byName.get(s.name);
    if (other)
      throw new EvalSetError(`eval sets ${other} and ${s.path} have one name, ${s.name}: rename one`);
    byName.set(s.name, s.path);
  }
}

/** Loads sets for a one-off look (decontaminate --report): every error thrown, with its file. */
export async function loadEvalIndex(paths: readonly string[], threshold: number, maxBytes: number) {
  const sets = new EvalSets({ paths, threshold, maxBytes, pollMs: Number.POSITIVE_INFINITY });
  return { index: await sets.current(), notices: sets.drainNotices() };
}

/** Per eval set, the QA grade rejected as contaminated by it or as from its items' sources. */
export type EvalRejectionCounts = Record<string, { contaminated: number; 'eval-source': number }>;

/**
 * Tallies qa.rejected records by eval set and code, each candidate once (a repeat of one is a
 * rejection of its own, code duplicate, and carries no match): what `mix` and the dashboard show.
 */
export class EvalRejectionTally {
  private readonly seen = new Set<string>();
  readonly counts: EvalRejectionCounts = {};

  add(value: unknown): void {
    const qa = value as { candidate?: { id?: string }; grade?: { evalMatches?: EvalMatch[] } } | null;
    const matches = qa?.grade?.evalMatches;
    const id = qa?.candidate?.id;
    if (!matches?.length || id === undefined || this.seen.has(id)) return;
    this.seen.add(id);
    tallyMatches(this.counts, matches);
  }
}

/** Counts one rejected QA's matches: once per code under each set it names (a set missing is added). */
export function tallyMatches(counts: EvalRejectionCounts, matches: readonly EvalMatch[]): void {
  for (const code of ['contaminated', 'eval-source'] as const)
    for (const set of new Set(matches.filter((m) => m.code === code).map((m) => m.evalSet))) {
      counts[set] ??= { contaminated: 0, 'eval-source': 0 };
      counts[set][code]++;
    }
}
