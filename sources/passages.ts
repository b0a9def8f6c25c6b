import type { Article } from '../schemas/article.js';
import type { PassageSpan } from '../schemas/qa.js';
import { type Span, sentenceSpans } from './sentences.js';

/**
 * Cuts an article into passages for question extraction: abstract (sectionIndex -1) and each
 * section, each passage within a token budget, cut at paragraph breaks first, then sentence
 * ends, then spaces; never inside a word. A single word longer than the budget (a sequence, a
 * URL) is a passage of its own, over budget, rather than cut. Every passage's text is exactly
 * `sectionText.slice(start, end)`, so a question can always be traced back to its characters.
 */
export interface PassageOptions {
  maxTokens: number;
  /** Tokens of the previous passage repeated at the start of the next, in whole units; default 0. */
  overlapTokens?: number;
  /** Token estimate; default ~4 characters a token, which fits English science text for common tokenisers. */
  countTokens?: (text: string) => number;
}

export const approxTokens = (text: string) => Math.ceil(text.length / 4);

function paragraphSpans(text: string): Span[] {
  const spans: Span[] = [];
  const re = /\n[ \t]*\n/g;
  let start = 0;
  for (let m = re.exec(text); ; m = re.exec(text)) {
    const end = m ? m.index : text.length;
    let s = start;
    let e = end;
    while (s < e && /\s/.test(text[s]!)) s++;
    while (e > s && /\s/.test(text[e - 1]!)) e--;
    if (e > s) spans.push({ start: s, end: e });
    if (!m) break;
    start = m.index + m[0].length;
  }
  return spans;
}

/** A unit to pack; words of one over-long sentence share a group and never pack with other units. */
interface Unit extends Span {
  group: number | null;
}

function wordSpans(text: string, span: Span, group: number): Unit[] {
  const out: Unit[] = [];
  const re = /\S+/g;
  const s = text.slice(span.start, span.end);
  for (let m = re.exec(s); m; m = re.exec(s)) {
    out.push({ start: span.start + m.index, end: span.start + m.index + m[0].length, group });
  }
  return out;
}

/** The smallest units a text is cut into: paragraphs that fit, else their sentences, else words. */
function units(text: string, fits: (s: Span) => boolean): Unit[] {
  const out: Unit[] = [];
  let group = 0;
  for (const p of paragraphSpans(text)) {
    if (fits(p)) {
      out.push({ ...p, group: null });
      continue;
    }
    for (const s of sentenceSpans(text, p.start, p.end)) {
      if (fits(s)) out.push({ ...s, group: null });
      else out.push(...wordSpans(text, s, group++));
    }
  }
  return out;
}

export function splitText(text: string, opts: PassageOptions): Span[] {
  const count = opts.countTokens ?? approxTokens;
  const max = opts.maxTokens;
  const overlap = opts.overlapTokens ?? 0;
  if (!(max > 0)) throw new Error('maxTokens must be positive');
  if (overlap < 0 || overlap >= max)
    throw new Error('overlapTokens must be at least 0 and less than maxTokens');
  const tok = (a: Span, b: Span) => count(text.slice(a.start, b.end));
  const u = units(text, (s) => count(text.slice(s.start, s.end)) <= max);
  // A passage cut from an over-long sentence stays inside that sentence, so it starts and ends where the sentence does.
  const glue = (a: number, b: number) => u[a]!.group === u[b]!.group;
  const out: Span[] = [];
  let i = 0;
  while (i < u.length) {
    let j = i;
    while (j + 1 < u.length && glue(j, j + 1) && tok(u[i]!, u[j + 1]!) <= max) j++;
    out.push({ start: u[i]!.start, end: u[j]!.end });
    if (j === u.length - 1) break;
    // Step back over whole units for the overlap, but never so far that the next passage cannot take a new unit.
    let k = j + 1;
    if (overlap > 0 && glue(j, j + 1)) {
      while (k - 1 > i && tok(u[k - 1]!, u[j]!) <= overlap && tok(u[k - 1]!, u[j + 1]!) <= max) k--;
    }
    i = k;
  }
  return out;
}

/** Passages of an article: the abstract first (sectionIndex -1), then sections in order. */
export function passagesOf(
  article: Pick<Article, 'abstract' | 'sections'>,
  opts: PassageOptions,
): PassageSpan[] {
  const texts: [number, string][] = [
    [-1, article.abstract],
    ...article.sections.map((s, i): [number, string] => [i, s.text]),
  ];
  return texts.flatMap(([sectionIndex, text]) =>
    splitText(text, opts).map((s) => ({
      sectionIndex,
      start: s.start,
      end: s.end,
      text: text.slice(s.start, s.end),
    })),
  );
}

/** The text a passage span refers to, for checking a span against its article. */
export function sectionText(
  article: Pick<Article, 'abstract' | 'sections'>,
  sectionIndex: number,
): string | undefined {
  return sectionIndex === -1 ? article.abstract : article.sections[sectionIndex]?.text;
}

/** How much a section's heading says its passages hold findings a question can test: less first. */
const SECTION_RANKS: readonly [RegExp, number][] = [
  [/result|finding|discussion|conclusion|summary|highlight/i, 1],
  [
    /method|material|procedure|protocol|experimental|acknowledg|funding|author|contribution|reference|supplement|availability|conflict|competing|abbreviation|ethic/i,
    3,
  ],
];

/**
 * The passages with the most informative first, so that `extract.maxPassages` keeps them: the
 * abstract, then results, discussion and conclusions, then the rest (introduction, background),
 * methods and back matter last; in text order within each rank.
 */
export function informativeFirst(
  article: Pick<Article, 'sections'>,
  passages: readonly PassageSpan[],
): PassageSpan[] {
  const rank = (p: PassageSpan) => {
    if (p.sectionIndex < 0) return 0;
    const heading = article.sections[p.sectionIndex]?.heading ?? '';
    return SECTION_RANKS.find(([re]) => re.test(heading))?.[1] ?? 2;
  };
  return passages
    .map((p, i) => ({ p, i, r: rank(p) }))
    .sort((a, b) => a.r - b.r || a.i - b.i)
    .map(({ p }) => p);
}
