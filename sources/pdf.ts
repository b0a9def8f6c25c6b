import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { type ByteSource, byteChunks } from './bytes.js';
import {
  DEFAULT_MAX_BYTES,
  deadLetter,
  finishedItem,
  labelOf,
  reasonOf,
  SourceError,
  type SourceItem,
} from './items.js';
import { type ArticleDraft, cleanInline, finishArticle } from './normalise.js';
import { plainTextToDraft } from './text.js';

/**
 * PDF text through pdf.js (the legacy build runs on Node 20). A PDF has no structure, only
 * positioned glyph runs: lines come from baselines, paragraphs from vertical gaps and font-size
 * changes, the title from the metadata or the largest type on page one, and sections from the
 * same heading rules as plain text. A scanned PDF has no text layer: it is a 'no text' dead letter,
 * unless its metadata names a title, which keeps it as a title-only article.
 */
export const PDF_PROCESSOR = 'sources/pdf';

interface TextRun {
  str: string;
  transform: number[];
  width: number;
  height: number;
  hasEOL: boolean;
}

interface Line {
  text: string;
  y: number;
  size: number;
  page: number;
}

const isRun = (item: object): item is TextRun => 'str' in item && 'transform' in item;

function standardFontDir(): string {
  // pdf.js reads the metrics of the 14 standard fonts from files shipped in its package.
  const pkg = createRequire(import.meta.url).resolve('pdfjs-dist/package.json');
  return `${join(dirname(pkg), 'standard_fonts')}/`;
}

function linesOfPage(items: readonly object[], page: number): Line[] {
  const lines: Line[] = [];
  let cur: (Line & { endX: number }) | null = null;
  const push = () => {
    if (cur?.text.trim()) lines.push({ text: cur.text.trim(), y: cur.y, size: cur.size, page });
    cur = null;
  };
  for (const item of items) {
    if (!isRun(item)) continue;
    const x = item.transform[4] ?? 0;
    const y = item.transform[5] ?? 0;
    const size = Math.hypot(item.transform[2] ?? 0, item.transform[3] ?? 0) || item.height;
    if (item.str) {
      if (cur && Math.abs(y - cur.y) > 0.5 * Math.max(size, cur.size)) push();
      if (!cur) cur = { text: '', y, size, page, endX: x };
      const gap = x - cur.endX;
      if (cur.text && gap > 0.15 * size && !/\s$/.test(cur.text) && !/^\s/.test(item.str)) cur.text += ' ';
      cur.text += item.str;
      cur.size = Math.max(cur.size, size);
      cur.endX = x + item.width;
    }
    if (item.hasEOL) push();
  }
  push();
  // Lone page numbers are furniture, not text.
  return lines.filter((l) => !/^\d{1,4}$/.test(l.text));
}

const JUNK_TITLE = /^(untitled|microsoft word|document\d*$|slide \d+)|\.(docx?|pdf|tex|indd)$/i;

function bodySize(lines: readonly Line[]): number {
  const sizes = lines.map((l) => l.size).sort((a, b) => a - b);
  return sizes[Math.floor(sizes.length / 2)] ?? 0;
}

/** Title lines: the run of largest type at the top of page one, when it is larger than the body. */
function titleLines(lines: readonly Line[]): number {
  const page1 = lines.filter((l) => l.page === 1);
  if (page1.length === 0) return 0;
  const max = Math.max(...page1.map((l) => l.size));
  if (max <= bodySize(lines) * 1.15) return 1;
  const start = lines.findIndex((l) => l.size === max);
  if (start !== 0) return 0;
  let n = 0;
  while (n < lines.length && lines[n]!.size === max && lines[n]!.page === 1) n++;
  return n;
}

/** Running text with '\n\n' where the vertical gap or a change of type size marks a new paragraph. */
function toText(lines: readonly Line[]): string {
  let out = '';
  let prev: Line | null = null;
  for (const line of lines) {
    if (prev) {
      const gap = prev.page === line.page ? prev.y - line.y : 0;
      const sizeChange = Math.abs(line.size - prev.size) > 0.12 * prev.size;
      out += gap > 1.7 * prev.size || sizeChange ? '\n\n' : '\n';
    }
    out += line.text;
    prev = line;
  }
  return out;
}

const DOI = /\b(10\.\d{4,9}\/[^\s"<>]+)/;

export async function pdfToDraft(data: Uint8Array, opts: { sourceUri?: string } = {}): Promise<ArticleDraft> {
  const { getDocument } = await import('pdfjs-dist/legacy/build/pdf.mjs');
  let doc: Awaited<ReturnType<typeof getDocument>['promise']>;
  try {
    doc = await getDocument({
      data,
      verbosity: 0,
      isEvalSupported: false,
      useSystemFonts: false,
      standardFontDataUrl: standardFontDir(),
    }).promise;
  } catch (e) {
    const name = (e as Error).name;
    if (name === 'PasswordException') throw new SourceError('encrypted', 'encrypted PDF: needs a password');
    throw new SourceError('malformed', `malformed PDF: ${(e as Error).message}`);
  }
  try {
    const lines: Line[] = [];
    for (let p = 1; p <= doc.numPages; p++) {
      const page = await doc.getPage(p);
      lines.push(...linesOfPage((await page.getTextContent()).items, p));
      page.cleanup();
    }
    const meta = (await doc.getMetadata().catch(() => null))?.info as { Title?: unknown } | undefined;
    const metaTitle = typeof meta?.Title === 'string' ? cleanInline(meta.Title) : '';
    const n = titleLines(lines);
    const fontTitle = cleanInline(
      lines
        .slice(0, n)
        .map((l) => l.text)
        .join(' '),
    );
    const title = metaTitle.length > 3 && !JUNK_TITLE.test(metaTitle) ? metaTitle : fontTitle;
    // The title printed on the page is dropped from the body whichever source named it.
    const body = lines.slice(
      title === fontTitle || fontTitle.toLowerCase() === metaTitle.toLowerCase() ? n : 0,
    );
    const draft = plainTextToDraft(toText(body), {
      title,
      source: 'pdf',
      dehyphenate: true,
      dropFrontMatter: true,
      ...opts,
    });
    const firstPage = lines
      .filter((l) => l.page === 1)
      .map((l) => l.text)
      .join('\n');
    const doi = DOI.exec(firstPage)?.[1]?.replace(/[.,;)\]]+$/, '') ?? null;
    return { ...draft, doi };
  } finally {
    await doc.destroy();
  }
}

export interface PdfReadOptions {
  path?: string;
  /** PDFs are read whole: larger ones are a dead letter; default 50 MB. */
  maxBytes?: number;
}

/** Reads one PDF as one article. Never throws. */
export async function* readPdf(src: ByteSource, opts: PdfReadOptions = {}): AsyncGenerator<SourceItem> {
  const path = labelOf(src, opts.path);
  const processor = PDF_PROCESSOR;
  try {
    const parts: Buffer[] = [];
    for await (const chunk of byteChunks(src, { maxBytes: opts.maxBytes ?? DEFAULT_MAX_BYTES }))
      parts.push(chunk);
    const data = Buffer.concat(parts);
    if (data.length === 0) {
      yield deadLetter({ path, position: null, code: 'empty-file', reason: 'empty file', processor });
      return;
    }
    if (!data.subarray(0, 1024).includes('%PDF-'))
      throw new SourceError('malformed', 'malformed PDF: no %PDF- header', 'byte 0');
    const done = finishArticle(
      await pdfToDraft(new Uint8Array(data.buffer, data.byteOffset, data.length), { sourceUri: path }),
    );
    yield finishedItem(done, { path, position: null, processor });
  } catch (e) {
    yield deadLetter({ path, processor, ...reasonOf(e) });
  }
}
