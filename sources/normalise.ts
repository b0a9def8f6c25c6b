import { z } from 'zod';
import { Article } from '../schemas/article.js';
import type { DeadLetterCode } from '../schemas/dead-letter.js';
import { articleId, contentHash, normaliseDoi } from '../schemas/ids.js';

/** An article before it has an id: what a reader builds. */
export type ArticleDraft = Omit<z.input<typeof Article>, 'id' | 'contentHash'>;

// C0/C1 controls except tab and newline, zero-width characters and soft hyphens: invisible in
// print, but they split words for tokenisers and hashes.
// biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
const INVISIBLE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u00ad\u200b-\u200d\u2060\ufeff]/g;
const SPACES = /[ \t\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]+/g;

// Inline tags that leak into abstracts from JATS/HTML-producing sources (Crossref's jats:p, S2, CSV exports).
const MARKUP_TAG =
  /<\/?(?:[a-z]+:)?(?:i|b|u|em|strong|sup|sub|br|p|span|div|italic|bold|sc|a|title|sec|abstract|underline|inf|math|mi|mo|mn|mrow|msub|msup)(?:\s+[\w:-]+\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'>]+))*\s*\/?>/gi;
const ENTITY = /&(?:#(\d{1,7})|#x([0-9a-f]{1,6})|(amp|lt|gt|quot|apos|nbsp));/gi;
const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

/** Removes HTML/JATS inline tags and decodes character references left in plain-text sources. */
export function stripMarkup(s: string): string {
  return s.replace(MARKUP_TAG, '').replace(ENTITY, (m, dec: string, hex: string, name: string) => {
    if (name) return NAMED[name.toLowerCase()] ?? m;
    const cp = dec ? Number.parseInt(dec, 10) : Number.parseInt(hex, 16);
    return cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : m;
  });
}

/** Stands in for a removed numbered citation so the brackets around it can go too (a private-use character). */
export const CITE = '\uE000';
/** What a numbered citation's text looks like: '3', '[3]', '3–5', '3, 7'. */
export const CITATION_TEXT = /^[\s\d,;–—\-−[\]()]*$/;
const SEP = '[\\s,;–—\\-−]*';
const BRACKETED_CITES = new RegExp(`[\\[(]\\s*${CITE}(?:${SEP}${CITE})*${SEP}[\\])]`, 'g');
const CITE_RUN = new RegExp(`${CITE}(?:${SEP}${CITE})+`, 'g');
const LONE_CITE = new RegExp(`\\s*${CITE}`, 'g');

/**
 * Removes citation marks and the brackets and separators they leave: 'soils [CITE], [CITE]–[CITE].'
 * becomes 'soils.'. Numbered citations mean nothing once the reference list is gone; author-year
 * ones are prose and are never marked.
 */
export function dropCitations(s: string): string {
  if (!s.includes(CITE)) return s;
  return s
    .replace(BRACKETED_CITES, CITE)
    .replace(CITE_RUN, CITE)
    .replace(LONE_CITE, '')
    .replace(/ +([,.;:])/g, '$1');
}

/** One line of text: titles, headings, keywords. Idempotent. */
export function cleanInline(s: string): string {
  return s.normalize('NFC').replace(INVISIBLE, '').replace(/\s+/g, ' ').trim();
}

/**
 * Running text: paragraphs separated by one blank line, lines inside a paragraph kept, runs of
 * spaces collapsed, lines trimmed. Idempotent, so finishing a finished article changes nothing.
 */
export function cleanText(s: string): string {
  return s
    .normalize('NFC')
    .replace(/\r\n?|[\u2028\u2029\u0085]/g, '\n')
    .replace(INVISIBLE, '')
    .replace(SPACES, ' ')
    .split('\n')
    .map((l) => l.trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

const MONTHS: Record<string, number> = {
  jan: 1,
  feb: 2,
  mar: 3,
  apr: 4,
  may: 5,
  jun: 6,
  jul: 7,
  aug: 8,
  sep: 9,
  oct: 10,
  nov: 11,
  dec: 12,
};

function monthNumber(m: string | number | null | undefined): number | null {
  if (m == null || m === '') return null;
  const n =
    typeof m === 'number'
      ? m
      : /^\d+$/.test(m.trim())
        ? Number(m.trim())
        : MONTHS[m.trim().slice(0, 3).toLowerCase()];
  return n !== undefined && n >= 1 && n <= 12 ? n : null;
}

/** YYYY[-MM[-DD]] from parts that may be missing, textual ('Dec') or out of range (dropped). */
export function partialDate(
  year: string | number | null | undefined,
  month?: string | number | null,
  day?: string | number | null,
): string | null {
  const y = String(year ?? '').trim();
  if (!/^\d{4}$/.test(y)) return null;
  const m = monthNumber(month);
  if (m === null) return y;
  const mm = String(m).padStart(2, '0');
  const d = day == null || day === '' ? Number.NaN : Number(String(day).trim());
  if (!Number.isInteger(d) || d < 1 || d > new Date(Date.UTC(Number(y), m, 0)).getUTCDate())
    return `${y}-${mm}`;
  return `${y}-${mm}-${String(d).padStart(2, '0')}`;
}

/** A date written any common way ('2020', '2020-05-17', '2020/5', 'May 2020', '1998 Dec-1999 Jan', 2020). */
export function parseDate(v: unknown): string | null {
  if (typeof v === 'number') return partialDate(Number.isInteger(v) ? v : null);
  if (typeof v !== 'string') return null;
  const s = v.trim();
  let m = /^(\d{4})(?:[-/.](\d{1,2})(?:[-/.](\d{1,2}))?)?(?:T\d.*|\s+\d{1,2}:\d{2}.*)?$/.exec(s);
  if (m) return partialDate(m[1], m[2], m[3]);
  // MEDLINE '2001 Jan 15'; a range ('1998 Dec-1999 Jan') or season falls through to its first year.
  m = /^(\d{4})\s+([A-Za-z]{3,})\.?(?:\s+(\d{1,2}))?$/.exec(s);
  if (m) return partialDate(m[1], m[2], m[3]);
  m = /^(?:(\d{1,2})\s+)?([A-Za-z]{3,})\.?,?\s+(\d{4})$/.exec(s); // 'May 2020', '17 May 2020'
  if (m) return partialDate(m[3], m[2], m[1]);
  m = /(?<!\d)(\d{4})(?!\d)/.exec(s); // anything else with a year in it: keep the year
  return m ? partialDate(m[1]) : null;
}

function cleanId(v: string | null | undefined, valid: RegExp): string | null {
  const s = v?.trim();
  return s && valid.test(s) ? s : null;
}

export function normalisePmcid(v: string | null | undefined): string | null {
  const s = v?.trim().toUpperCase();
  const m = s ? /^(?:PMC)?(\d+)$/.exec(s) : null;
  return m ? `PMC${m[1]}` : null;
}

function unique(values: readonly string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const v of values) {
    const key = v.toLowerCase();
    if (v && !seen.has(key)) {
      seen.add(key);
      out.push(v);
    }
  }
  return out;
}

/** The hash an article's id falls back to, over exactly the text passages are cut from. */
export function articleContentHash(a: Pick<Article, 'title' | 'abstract' | 'sections'>): string {
  return contentHash(a.title, a.abstract, ...a.sections.flatMap((s) => [s.heading, s.text]));
}

export type Finished =
  | { ok: true; article: Article }
  | { ok: false; code: Extract<DeadLetterCode, 'no-text' | 'invalid-article'>; reason: string };

/**
 * Cleans a draft, computes its content hash and stable id (DOI > PMID > PMCID > hash) and
 * validates it. An article with no title, abstract or section text is refused as 'no text'. A
 * title-only record (common in MEDLINE) is kept: it has no passages to question, but its MeSH
 * headings still count towards the topic signal.
 */
export function finishArticle(draft: ArticleDraft): Finished {
  const doi = draft.doi?.trim() ? normaliseDoi(draft.doi) : null;
  const sections = (draft.sections ?? [])
    .map((s) => ({ heading: cleanInline(s.heading), text: cleanText(s.text) }))
    .filter((s) => s.text);
  const body = {
    title: cleanInline(draft.title),
    abstract: cleanText(draft.abstract),
    sections,
  };
  if (!body.title && !body.abstract && sections.length === 0)
    return { ok: false, code: 'no-text', reason: 'no text' };
  const hash = articleContentHash(body);
  const ids = {
    doi: doi && /^10\.\S+\/\S+$/.test(doi) ? doi : null,
    pmid: cleanId(draft.pmid, /^\d+$/),
    pmcid: normalisePmcid(draft.pmcid),
  };
  const candidate = {
    ...draft,
    ...body,
    ...ids,
    id: articleId({ ...ids, contentHash: hash }),
    captions: (draft.captions ?? [])
      .map((c) => ({
        kind: c.kind,
        label: c.label ? cleanInline(c.label) || null : null,
        text: cleanText(c.text),
      }))
      .filter((c) => c.text),
    keywords: unique((draft.keywords ?? []).map(cleanInline)),
    publicationTypes: unique((draft.publicationTypes ?? []).map(cleanInline)),
    journal: draft.journal ? cleanInline(draft.journal) || null : null,
    licence: draft.licence ? cleanText(draft.licence) || null : null,
    contentHash: hash,
  };
  const parsed = Article.safeParse(candidate);
  if (!parsed.success)
    return {
      ok: false,
      code: 'invalid-article',
      reason: `invalid article: ${z.prettifyError(parsed.error)}`,
    };
  return { ok: true, article: parsed.data };
}
