import type { Section } from '../schemas/article.js';
import { type ByteSource, byteChunks } from './bytes.js';
import { textChunks } from './decode.js';
import { displayHeading, HeadingPath, headingOf } from './headings.js';
import { DEFAULT_MAX_BYTES, deadLetter, finishedItem, labelOf, reasonOf, type SourceItem } from './items.js';
import { type ArticleDraft, cleanInline, finishArticle, parseDate, stripMarkup } from './normalise.js';

/**
 * Plain text and Markdown. Markdown headings become sections ('Parent / Child' below the title);
 * the first H1, else the first line, is the title; an 'Abstract' section becomes the abstract.
 * Plain text has no markup, so sections come from lines that name a usual section
 * ('Introduction', '2. Methods'); references and acknowledgements are left out.
 */
export const TEXT_PROCESSOR = 'sources/text';

export interface TextDraftOptions {
  sourceUri?: string;
  source?: string;
  /** A title found some other way (PDF metadata or font size); the text then has no title line. */
  title?: string;
  /** Join words hyphenated across line ends (PDF text); off for typed text, where 'well-\nknown' is a real hyphen. */
  dehyphenate?: boolean;
  /**
   * Drop what comes before the first heading when there is one. In a PDF that is the author
   * list, affiliations and journal furniture; in a typed text file it may be the point, so kept.
   */
  dropFrontMatter?: boolean;
}

const LIST_ITEM = /^\s*(?:[-*+•]|\d+[.)])\s+/;

/** Lines of one paragraph as running text; list items keep their own lines. */
function unwrap(lines: readonly string[], dehyphenate: boolean): string {
  let out = '';
  for (const raw of lines) {
    const line = raw.trim();
    if (!line) continue;
    if (!out) out = line;
    else if (LIST_ITEM.test(line)) out += `\n${line}`;
    else if (dehyphenate && /[a-z]-$/.test(out) && /^[a-z]/.test(line)) out = out.slice(0, -1) + line;
    else out += ` ${line}`;
  }
  return out;
}

const blocksOf = (text: string) =>
  text
    .replace(/\r\n?/g, '\n')
    .split(/\n[ \t]*\n/)
    .map((b) => b.split('\n').filter((l) => l.trim()))
    .filter((b) => b.length > 0);

type Body = { abstract: string; sections: Section[] };

/** Groups paragraphs under the headings found in plain text. */
function structure(blocks: string[][], dehyphenate: boolean, dropFrontMatter: boolean): Body {
  const abstract: string[] = [];
  const sections: Section[] = [];
  let heading = '';
  const hasHeading = blocks.some((b) => headingOf(b[0]!, b.length === 1));
  let mode: 'abstract' | 'section' | 'skip' = dropFrontMatter && hasHeading ? 'skip' : 'section';
  let pending: string[] = [];
  const paths = new HeadingPath();
  const flush = () => {
    if (pending.length && mode === 'section') sections.push({ heading, text: pending.join('\n\n') });
    pending = [];
  };
  for (const block of blocks) {
    let lines = block;
    const h = headingOf(lines[0]!, lines.length === 1);
    if (h) {
      flush();
      mode = h.kind === 'abstract' ? 'abstract' : h.kind === 'section' ? 'section' : 'skip';
      heading = paths.headingFor(displayHeading(h.title), h.number);
      lines = h.rest ? [h.rest, ...lines.slice(1)] : lines.slice(1);
    }
    const para = unwrap(lines, dehyphenate);
    if (!para) continue;
    if (mode === 'abstract') abstract.push(para);
    else if (mode === 'section') pending.push(para);
    if (h?.rest && mode === 'abstract') {
      // 'Abstract: …' run into its paragraph is one paragraph long; what follows has no heading.
      mode = 'section';
      heading = '';
    }
  }
  flush();
  return { abstract: abstract.join('\n\n'), sections };
}

export function plainTextToDraft(text: string, opts: TextDraftOptions = {}): ArticleDraft {
  const blocks = blocksOf(text);
  let title = opts.title ?? '';
  if (!opts.title && blocks[0]) {
    title = blocks[0].shift()!;
    if (blocks[0].length === 0) blocks.shift();
  }
  return {
    source: opts.source ?? 'text',
    ...(opts.sourceUri ? { sourceUri: opts.sourceUri } : {}),
    doi: null,
    pmid: null,
    pmcid: null,
    title: cleanInline(title),
    ...structure(blocks, opts.dehyphenate ?? false, opts.dropFrontMatter ?? false),
    journal: null,
    published: null,
    licence: null,
  };
}

// ---- Markdown ----

/** Inline Markdown to plain text: links keep their words, images and emphasis marks go. */
export function markdownInline(s: string): string {
  return stripMarkup(
    s
      .replace(/!\[[^\]]*\]\([^)]*\)/g, '')
      .replace(/\[([^\]]+)\]\([^)]*\)/g, '$1')
      .replace(/\[([^\]]+)\]\[[^\]]*\]/g, '$1')
      .replace(/<(https?:\/\/[^>\s]+)>/g, '$1')
      .replace(/`([^`]+)`/g, '$1')
      .replace(/(\*\*|__)(?=\S)([\s\S]*?\S)\1/g, '$2')
      .replace(/(^|[^\w*])\*(?=\S)([^*]*?\S)\*(?!\w)/g, '$1$2')
      .replace(/(^|[^\w])_(?=\S)([^_]*?\S)_(?![\w])/g, '$1$2')
      .replace(/~~(?=\S)([\s\S]*?\S)~~/g, '$1'),
  );
}

interface FrontMatter {
  [key: string]: string | string[];
}

/** The simple 'key: value' YAML front matter notes and exports put first; nothing fancier. */
function frontMatter(text: string): { meta: FrontMatter; rest: string } {
  const m = /^---[ \t]*\n([\s\S]*?)\n---[ \t]*(?:\n|$)/.exec(text);
  if (!m) return { meta: {}, rest: text };
  const meta: FrontMatter = {};
  for (const line of m[1]!.split('\n')) {
    const kv = /^([A-Za-z_][\w-]*)\s*:\s*(.*)$/.exec(line);
    if (!kv) continue;
    const v = kv[2]!.trim().replace(/^["']|["']$/g, '');
    meta[kv[1]!.toLowerCase()] = /^\[.*\]$/.test(v)
      ? v
          .slice(1, -1)
          .split(',')
          .map((x) => x.trim().replace(/^["']|["']$/g, ''))
          .filter(Boolean)
      : v;
  }
  return { meta, rest: text.slice(m[0].length) };
}

const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join(', ') : v) ?? '';

export function markdownToDraft(text: string, opts: TextDraftOptions = {}): ArticleDraft {
  const { meta, rest } = frontMatter(text.replace(/\r\n?/g, '\n'));
  const lines = rest.split('\n');
  let title = one(meta.title);
  // Without an H1 (and no front-matter title) the first line is the title, whatever it is.
  const hasH1 = lines.some(
    (l, i) => /^ {0,3}#\s/.test(l) || (l.trim() !== '' && /^ {0,3}=+\s*$/.test(lines[i + 1] ?? '')),
  );
  if (!title && !hasH1) {
    const at = lines.findIndex((l) => l.trim());
    if (at >= 0) {
      title = markdownInline(lines[at]!.replace(/^ {0,3}#{1,6}\s+/, '').replace(/\s+#+\s*$/, ''));
      lines.splice(at, 1);
    }
  }
  const stack: { level: number; title: string }[] = [];
  const sections: Section[] = [];
  const abstract: string[] = [];
  let inAbstract = false;
  // Below a References or Acknowledgements heading nothing is kept until a heading at its level or above.
  let skipBelow: number | null = null;
  let paragraphs: string[] = [];
  let para: string[] = [];
  let table: string[] = [];
  let fence: string | null = null;

  const endPara = () => {
    const p = unwrap(para.map(markdownInline), false);
    if (p) paragraphs.push(p);
    para = [];
    // Table rows stay one to a line.
    if (table.length) paragraphs.push(table.map((r) => markdownInline(r).trim()).join('\n'));
    table = [];
  };
  const flush = () => {
    endPara();
    if (paragraphs.length && skipBelow === null) {
      if (inAbstract) abstract.push(...paragraphs);
      else sections.push({ heading: stack.map((s) => s.title).join(' / '), text: paragraphs.join('\n\n') });
    }
    paragraphs = [];
  };
  const heading = (level: number, raw: string) => {
    const t = cleanInline(markdownInline(raw));
    flush();
    if (level === 1 && !title) {
      title = t;
      return;
    }
    while (stack.length && stack[stack.length - 1]!.level >= level) stack.pop();
    if (skipBelow !== null && level <= skipBelow) skipBelow = null;
    const kind = headingOf(t, true)?.kind;
    if (kind === 'references' || kind === 'admin') skipBelow ??= level;
    inAbstract = kind === 'abstract' && stack.length === 0;
    if (!inAbstract) stack.push({ level, title: t });
  };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (fence) {
      if (line.trim().startsWith(fence)) fence = null;
      else para.push(line);
      continue;
    }
    const fenceOpen = /^\s*(```|~~~)/.exec(line);
    if (fenceOpen) {
      fence = fenceOpen[1]!;
      continue;
    }
    const atx = /^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/.exec(line);
    if (atx) {
      heading(atx[1]!.length, atx[2]!);
      continue;
    }
    const next = lines[i + 1];
    if (
      line.trim() &&
      para.length === 0 &&
      next !== undefined &&
      /^ {0,3}(=+|-+)\s*$/.test(next) &&
      !LIST_ITEM.test(line)
    ) {
      heading(next.trim().startsWith('=') ? 1 : 2, line);
      i++;
      continue;
    }
    if (!line.trim()) {
      endPara();
      continue;
    }
    if (/^ {0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) continue; // thematic break
    if (/^ {0,3}\[[^\]]+\]:\s+\S/.test(line)) continue; // link reference definition
    if (/^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/.test(line)) continue; // table rule
    const row = /^\s*\|(.*)\|\s*$/.exec(line);
    if (row) {
      if (para.length) endPara();
      table.push(row[1]!.trim().replace(/\s*\|\s*/g, ' | '));
      continue;
    }
    if (table.length) endPara();
    para.push(line.replace(/^\s*>\s?/, ''));
  }
  flush();
  const keywords = meta.keywords ?? meta.tags;
  return {
    source: opts.source ?? 'markdown',
    ...(opts.sourceUri ? { sourceUri: opts.sourceUri } : {}),
    doi: one(meta.doi) || null,
    pmid: one(meta.pmid) || null,
    pmcid: one(meta.pmcid) || null,
    title: cleanInline(title),
    abstract: abstract.join('\n\n') || one(meta.abstract),
    sections,
    keywords: Array.isArray(keywords)
      ? keywords
      : keywords
        ? keywords.split(/[,;]/).map((k) => k.trim())
        : [],
    journal: one(meta.journal) || null,
    published: parseDate(one(meta.date ?? meta.published)),
    licence: one(meta.licence ?? meta.license) || null,
  };
}

export interface TextReadOptions {
  path?: string;
  markdown?: boolean;
  /** Text files are read whole: larger ones are a dead letter; default 50 MB. */
  maxBytes?: number;
}

/** Reads a whole text or Markdown file (plain or gzipped) as one article. Never throws. */
export async function* readText(src: ByteSource, opts: TextReadOptions = {}): AsyncGenerator<SourceItem> {
  const path = labelOf(src, opts.path);
  const processor = TEXT_PROCESSOR;
  let text = '';
  try {
    for await (const chunk of textChunks(byteChunks(src, { maxBytes: opts.maxBytes ?? DEFAULT_MAX_BYTES })))
      text += chunk;
  } catch (e) {
    const fault = reasonOf(e);
    yield deadLetter({ path, processor, ...fault, payload: fault.payload || text });
    return;
  }
  if (!text.trim()) {
    yield deadLetter({ path, position: null, code: 'empty-file', reason: 'empty file', processor });
    return;
  }
  const draft = opts.markdown
    ? markdownToDraft(text, { sourceUri: path })
    : plainTextToDraft(text, { sourceUri: path });
  yield finishedItem(finishArticle(draft), { path, position: null, processor, payload: text });
}
