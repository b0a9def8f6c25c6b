import { stat, watch } from 'node:fs/promises';
import { relative, sep } from 'node:path';
import type { SourceItem } from '../sources/items.js';
import { type ReadOptions, readPath, walk } from '../sources/read.js';
import { changed, linkRecord, WorkIndex } from '../sources/works.js';
import type { Processor, StepContext } from '../topology/processor.js';
import type { ProcessorTask } from '../topology/task.js';

/**
 * Ingestion as a processor with no input topic: each step takes a chunk of reader items, emits
 * articles and dead letters, and records how far into the file it got, all in one commit. So an
 * interrupted ingest resumes inside the file and a finished file is never read twice.
 */
export const ingestProcessor: Processor = {
  name: 'ingest',
  description: 'files and API pages to articles, deduplicated across sources',
  reads: [],
  writes: ['articles', 'dlq'],
  stores: ['files', 'articles', 'article-keys', 'cursors'],
  async process() {
    throw new Error('ingest is driven by ingestFile/watchFolder/poll steps, not by an input topic');
  },
};

export interface IngestCounts {
  articles: number;
  updated: number;
  duplicates: number;
  deadLetters: number;
}

export const noCounts = (): IngestCounts => ({ articles: 0, updated: 0, duplicates: 0, deadLetters: 0 });

export function addCounts(into: IngestCounts, from: IngestCounts): void {
  into.articles += from.articles;
  into.updated += from.updated;
  into.duplicates += from.duplicates;
  into.deadLetters += from.deadLetters;
}

/**
 * One reader item into the step. A record of a work seen before (by an id, a declared relation or
 * its abstract: sources/works.ts) is linked into the work and re-emitted under the work's id (so QA
 * ids derived from it stay stable) if that adds anything; otherwise it is counted as a duplicate.
 * Keys that name two different works are logged with both ids, and the works stay apart.
 */
export function emitItem(ctx: StepContext, item: SourceItem, counts: IngestCounts): void {
  if (item.kind === 'dead-letter') {
    ctx.emit('dlq', item.deadLetter.id, item.deadLetter);
    counts.deadLetters++;
    return;
  }
  const works = new WorkIndex(ctx.store('articles'), ctx.store('article-keys'));
  const record = item.article;
  const found = works.find(record);
  for (const other of found?.conflicts ?? [])
    ctx.log.warn(
      { record: record.id, source: record.source, work: found!.work.id, other: other.workId, by: other.link },
      'a record names two works: linked to the first, the other left apart',
    );
  if (!found) {
    works.put(record);
    ctx.emit('articles', record.id, record);
    counts.articles++;
    return;
  }
  const next = linkRecord(found.work, record, found.link);
  if (!changed(found.work, next)) {
    counts.duplicates++;
    ctx.log.debug({ id: found.work.id, source: record.source }, 'duplicate article');
    return;
  }
  works.put(next);
  ctx.emit('articles', next.id, next);
  counts.updated++;
}

interface FileState {
  fingerprint: string;
  /** Reader items already committed: a restart skips this many. */
  consumed: number;
  done: boolean;
}

/**
 * Ingests one file in steps of `chunk` items. Returns 'unchanged' for a file already ingested
 * whole with the same size and modification time.
 */
export async function ingestFile(
  task: ProcessorTask,
  path: string,
  opts: { read?: ReadOptions; chunk?: number; onItems?: (n: number) => void } = {},
): Promise<{ status: 'ingested' | 'unchanged'; counts: IngestCounts }> {
  const counts = noCounts();
  const info = await stat(path).catch(() => null);
  const fingerprint = info ? `${info.size}:${info.mtimeMs}` : 'missing';
  const previous = task.readState<FileState>('files', path);
  if (previous?.fingerprint === fingerprint && previous.done) return { status: 'unchanged', counts };
  const skip = previous?.fingerprint === fingerprint ? previous.consumed : 0;
  let consumed = 0;
  let chunk: SourceItem[] = [];
  const commit = async (done: boolean) => {
    const items = chunk;
    chunk = [];
    let stepCounts = noCounts();
    await task.stepWith(async (ctx) => {
      stepCounts = noCounts(); // a retried step starts over
      for (const item of items) emitItem(ctx, item, stepCounts);
      ctx.store('files').put(path, { fingerprint, consumed, done } satisfies FileState);
    });
    addCounts(counts, stepCounts);
    opts.onItems?.(items.length);
  };
  for await (const item of readPath(path, opts.read)) {
    consumed++;
    if (consumed <= skip) continue;
    chunk.push(item);
    if (chunk.length >= (opts.chunk ?? 200)) await commit(false);
  }
  await commit(true);
  return { status: 'ingested', counts };
}

const GLOB_CHARS = /[*?[]/;

/** Files named by paths, folders (walked) and globs (`*`, `**`, `?`, `[...]`), in a stable order. */
export async function expandPaths(patterns: readonly string[]): Promise<string[]> {
  const out = new Set<string>();
  for (const pattern of patterns) {
    if (!GLOB_CHARS.test(pattern)) {
      const info = await stat(pattern).catch(() => null);
      if (info?.isDirectory()) for await (const f of walk(pattern)) out.add(f);
      else out.add(pattern); // a missing or odd file still goes to the reader, which dead-letters it
      continue;
    }
    const parts = pattern.split(/[/\\]/);
    const firstMagic = parts.findIndex((p) => GLOB_CHARS.test(p));
    const base = parts.slice(0, firstMagic).join(sep) || '.';
    const matcher = globToRegExp(parts.slice(firstMagic).join('/'));
    if (!(await stat(base).catch(() => null))?.isDirectory()) continue;
    for await (const f of walk(base)) {
      if (matcher.test(relative(base, f).split(sep).join('/'))) out.add(f);
    }
  }
  return [...out];
}

function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*' && glob[i + 1] === '*') {
      re += glob[i + 2] === '/' ? '(?:.*/)?' : '.*';
      i += glob[i + 2] === '/' ? 2 : 1;
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i);
      re += end > i ? glob.slice(i, end + 1) : '\\[';
      i = Math.max(end, i);
    } else re += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/**
 * Watches a folder: a file is ingested once it is complete, meaning its size and modification
 * time did not change between two scans and it has not been written to for settleMs, so a file
 * still being copied in is left alone. Scans
 * run on file-system events and at least every intervalMs; state makes restarts resume.
 */
export async function watchFolder(
  task: ProcessorTask,
  dir: string,
  opts: {
    intervalMs?: number;
    settleMs?: number;
    signal: AbortSignal;
    read?: ReadOptions;
    onFile?: (path: string, counts: IngestCounts) => void;
  },
): Promise<void> {
  const lastSeen = new Map<string, string>();
  const events = watch(dir, { recursive: true, signal: opts.signal })[Symbol.asyncIterator]();
  let pending = events.next().catch(() => undefined);
  while (!opts.signal.aborted) {
    for await (const path of walk(dir)) {
      const info = await stat(path).catch(() => null);
      if (!info) continue;
      const fingerprint = `${info.size}:${info.mtimeMs}`;
      // Complete: unchanged since the last scan and untouched for settleMs, so two scans in quick
      // succession (a burst of file events) cannot mistake a pause in a copy for its end.
      if (lastSeen.get(path) === fingerprint && Date.now() - info.mtimeMs >= (opts.settleMs ?? 1000)) {
        const { status, counts } = await ingestFile(task, path, { read: opts.read });
        if (status === 'ingested') opts.onFile?.(path, counts);
      }
      lastSeen.set(path, fingerprint);
    }
    const tick = new Promise<void>((resolve) => setTimeout(resolve, opts.intervalMs ?? 1000));
    // A change rescans at once; completeness still needs two scans that agree.
    if ((await Promise.race([pending.then(() => 'event'), tick])) === 'event') {
      pending = events.next().catch(() => undefined);
    }
  }
}
