import { readdir, stat } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import { byteChunks } from './bytes.js';
import { textChunks } from './decode.js';
import { DEFAULT_MAX_BYTES, deadLetter, reasonOf, type SourceItem } from './items.js';
import { readJats } from './jats.js';
import { readJsonl } from './jsonl.js';
import type { JsonlMappingChoice } from './jsonl-mapping.js';
import { readMedline } from './medline.js';
import { readPdf } from './pdf.js';
import { readText } from './text.js';

export type SourceFormat = 'jats' | 'medline' | 'jsonl' | 'text' | 'markdown' | 'pdf';

export interface ReadOptions {
  /**
   * Size limit for formats read whole (text, Markdown, PDF) and for one record of a streamed
   * format (an XML article, a JSONL line); default 50 MB. Streamed files themselves (MEDLINE,
   * JSONL, article sets) have no limit.
   */
  maxBytes?: number;
  /** Field mapping for JSONL; default 'auto'. */
  jsonl?: JsonlMappingChoice;
  /** Skip detection. */
  format?: SourceFormat;
}

const BY_EXTENSION: Record<string, SourceFormat | 'xml'> = {
  '.xml': 'xml',
  '.nxml': 'xml',
  '.jsonl': 'jsonl',
  '.ndjson': 'jsonl',
  '.txt': 'text',
  '.text': 'text',
  '.md': 'markdown',
  '.markdown': 'markdown',
  '.pdf': 'pdf',
};

const JATS_ROOTS = new Set(['article', 'pmc-articleset', 'articles']);
const MEDLINE_ROOTS = new Set([
  'PubmedArticleSet',
  'MedlineCitationSet',
  'PubmedBookArticleSet',
  'PubmedArticle',
  'PubmedBookArticle',
  'MedlineCitation',
]);
// Under another root (an export's wrapper, OAI-PMH), the first record element says the format.
const RECORD_TAG =
  /<(article|PubmedArticle|PubmedBookArticle|MedlineCitation|PubmedArticleSet|MedlineCitationSet|PubmedBookArticleSet|pmc-articleset)[\s/>]/;

/** The extension that names the format, looking through '.gz'. */
function extensionOf(path: string): string {
  const name = basename(path).toLowerCase();
  const bare = name.endsWith('.gz') ? name.slice(0, -3) : name;
  return extname(bare);
}

/** The root element's name from the first 64 KiB, past the declaration, comments, PIs and DOCTYPE. */
export async function sniffXmlRoot(path: string): Promise<string | null> {
  let head = '';
  try {
    for await (const chunk of textChunks(byteChunks(path), { xml: true })) {
      head += chunk;
      if (head.length >= 64 * 1024) break;
    }
  } catch {
    // Unreadable: the reader will say why, with a position.
  }
  const rest = head
    .replace(/^\uFEFF/, '')
    .replace(/<\?[\s\S]*?\?>/g, '')
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(/<!DOCTYPE[^[>]*(\[[\s\S]*?\])?\s*>/i, '');
  return /<([A-Za-z_][\w.:-]*)/.exec(rest)?.[1] ?? null;
}

async function sniffContent(path: string): Promise<SourceFormat | 'xml' | null> {
  let head = Buffer.alloc(0);
  try {
    for await (const chunk of byteChunks(path)) {
      head = Buffer.concat([head, chunk]);
      if (head.length >= 1024) break;
    }
  } catch {
    return null;
  }
  const start = head
    .subarray(0, 1024)
    .toString('latin1')
    .replace(/^\uFEFF|^\xEF\xBB\xBF/, '')
    .trimStart();
  if (start.startsWith('%PDF-')) return 'pdf';
  if (start.startsWith('<')) return 'xml';
  if (start.startsWith('{')) return 'jsonl';
  return null;
}

/**
 * The first record (or record set) element anywhere in the file, for a root neither format
 * names: read only as far as the first one, so a wrapped baseline file costs a few bytes.
 */
async function sniffRecordFormat(path: string): Promise<'jats' | 'medline' | null> {
  let tail = '';
  try {
    for await (const chunk of textChunks(byteChunks(path), { xml: true })) {
      const text = tail + chunk;
      const m = RECORD_TAG.exec(text);
      if (m) return m[1] === 'article' || m[1] === 'pmc-articleset' ? 'jats' : 'medline';
      tail = text.slice(-40);
    }
  } catch {
    // Unreadable past this point: the reader will say why, with a position.
    return 'jats';
  }
  return null;
}

/** The format of a file, from its extension and, for XML or no extension, its content. */
export async function detectFormat(path: string): Promise<SourceFormat | { unknown: string }> {
  let format = BY_EXTENSION[extensionOf(path)] ?? (await sniffContent(path));
  if (format === null) return { unknown: `unknown file type '${extensionOf(path) || basename(path)}'` };
  if (format !== 'xml') return format;
  const root = await sniffXmlRoot(path);
  if (root === null || JATS_ROOTS.has(root))
    format = 'jats'; // no root: the JATS reader reports the real fault
  else if (MEDLINE_ROOTS.has(root)) format = 'medline';
  else {
    const found = await sniffRecordFormat(path);
    if (found === null)
      return {
        unknown: `neither JATS nor PubMed/MEDLINE XML: no <article>, <PubmedArticle>, <PubmedBookArticle> or <MedlineCitation> element under the root <${root}>`,
      };
    format = found;
  }
  return format;
}

const WHOLE_FILE: ReadonlySet<SourceFormat> = new Set(['text', 'markdown', 'pdf']);

/** Files a directory walk picks up: known extensions, plain or gzipped; hidden files are skipped. */
export function isReadable(path: string): boolean {
  return !basename(path).startsWith('.') && extensionOf(path) in BY_EXTENSION;
}

/** Readable files under a directory, sorted, recursive, hidden ones skipped. */
export async function* walk(dir: string): AsyncGenerator<string> {
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
  for (const e of entries) {
    if (e.name.startsWith('.')) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* walk(p);
    else if (e.isFile() && isReadable(p)) yield p;
  }
}

async function* readFile(path: string, opts: ReadOptions): AsyncGenerator<SourceItem> {
  try {
    yield* readDetected(path, opts);
  } catch (e) {
    // The readers never throw; this is detection or stat failing (a file removed mid-walk).
    yield faultOf(path, e);
  }
}

function faultOf(path: string, e: unknown): SourceItem {
  const fault = reasonOf(e);
  // A file-system error (ENOENT: removed mid-walk, EACCES) is no fault of a reader.
  if ((e as NodeJS.ErrnoException | undefined)?.code)
    return deadLetter({
      ...fault,
      path,
      code: 'cannot-read',
      reason: `cannot read: ${(e as Error).message}`,
      processor: 'sources/read',
    });
  return deadLetter({ ...fault, path, processor: 'sources/read' });
}

async function* readDetected(path: string, opts: ReadOptions): AsyncGenerator<SourceItem> {
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  const detected = opts.format ?? (await detectFormat(path));
  if (typeof detected !== 'string') {
    yield deadLetter({
      path,
      position: null,
      code: 'unknown-format',
      reason: detected.unknown,
      processor: 'sources/read',
    });
    return;
  }
  if (WHOLE_FILE.has(detected) && !path.toLowerCase().endsWith('.gz')) {
    // Refuse before reading a byte; gzipped files are counted as they inflate instead.
    const size = (await stat(path)).size;
    if (size > maxBytes) {
      yield deadLetter({
        path,
        position: `byte ${maxBytes}`,
        code: 'too-large',
        reason: `over the size limit of ${maxBytes} bytes (${size} bytes)`,
        processor: `sources/${detected === 'markdown' ? 'text' : detected}`,
      });
      return;
    }
  }
  switch (detected) {
    case 'jats':
      yield* readJats(path, { maxRecordBytes: maxBytes });
      break;
    case 'medline':
      yield* readMedline(path, { maxRecordBytes: maxBytes });
      break;
    case 'jsonl':
      yield* readJsonl(path, { mapping: opts.jsonl ?? 'auto', maxLineBytes: maxBytes });
      break;
    case 'text':
    case 'markdown':
      yield* readText(path, { markdown: detected === 'markdown', maxBytes });
      break;
    case 'pdf':
      yield* readPdf(path, { maxBytes });
      break;
  }
}

/**
 * Reads a file, or every readable file under a directory (sorted, recursive), as articles and
 * dead letters. Bad input never throws out of here: each fault is one dead letter naming the
 * file, a position and the reason, after the articles that came before it in the same file.
 */
export async function* readPath(path: string, opts: ReadOptions = {}): AsyncGenerator<SourceItem> {
  try {
    const info = await stat(path);
    if (info.isDirectory()) {
      for await (const file of walk(path)) yield* readFile(file, opts);
    } else {
      yield* readFile(path, opts);
    }
  } catch (e) {
    yield faultOf(path, e);
  }
}
