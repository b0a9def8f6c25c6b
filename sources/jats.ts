import type { z } from 'zod';
import type { Caption, Section } from '../schemas/article.js';
import type { ByteSource } from './bytes.js';
import type { SourceItem } from './items.js';
import {
  type ArticleDraft,
  CITATION_TEXT,
  CITE,
  cleanInline,
  dropCitations,
  normalisePmcid,
  partialDate,
} from './normalise.js';
import {
  attr,
  child,
  childElements,
  first,
  firstDescendant,
  forEachDescendant,
  localName,
  markFault,
  rawText,
  select,
  type XmlElement,
  type XmlNode,
} from './xml.js';
import { readXml, type XmlFormat, type XmlReaderOptions } from './xml-reader.js';
import { inlineChildren, inlineText, mathmlText, texOf, tidy } from './xml-text.js';

/**
 * JATS / NLM NXML full text (PMC, PLOS, eLife, BMC). Body sections keep their headings (nested
 * sections as 'Parent / Child'); figure and table captions go to `captions`, never into section
 * text; references, acknowledgements, footnotes and sub-articles (eLife decision letters) are left out.
 */
export const JATS_PROCESSOR = 'sources/jats';

type CaptionT = z.infer<typeof Caption>;

// Whole elements whose text is not running prose: floats (captured as captions), references, markers.
const SKIP = new Set([
  'fig',
  'fig-group',
  'table-wrap',
  'table-wrap-group',
  'table',
  'array',
  'ref-list',
  'supplementary-material',
  'graphic',
  'inline-graphic',
  'media',
  'object-id',
  'fn',
  'fn-group',
  'label',
  'sub-article',
  'response',
  'ack',
  'alt-text',
  'long-desc',
  'permissions',
  'attrib',
]);

const isTex = (e: XmlElement) => localName(e.name) === 'tex-math';
// <mml:math>, <math xmlns="…MathML">, any prefix.
const isMath = (e: XmlElement) => localName(e.name) === 'math';

/**
 * A formula as text: its TeX when it has one (wherever it sits: under <alternatives>, even inside
 * the MathML), else its MathML read linearly, else the text of its content (a formula set as
 * plain text with <sub>/<sup>; one that is only an image gives nothing).
 */
function formula(el: XmlElement, display: boolean): string {
  const tex = firstDescendant(el, isTex);
  const t = tex ? texOf(tex) : '';
  if (t) return display ? `$$${t}$$` : `$${t}$`;
  const math = firstDescendant(el, isMath);
  const m = math ? mathmlText(math) : '';
  if (m) return m;
  // The content, never el itself: rendering el would send it through special() back here, the
  // endless recursion that overflowed the stack on formulas with no TeX and no <mml:math> (a
  // graphic, or MathML in the default namespace, which a search for 'mml:math' missed).
  return inlineChildren(el, formulaRules);
}

/** A formula set as plain text reads its scripts as such: 'k<sub>0</sub>c<sup>2</sup>' -> 'k_0c^2'. */
function script(el: XmlElement, mark: string): string {
  const t = tidy(inlineChildren(el, formulaRules));
  if (!t) return '';
  return /^[\p{L}\p{N}.′*]+$/u.test(t) || /^[-−+]?\p{N}+$/u.test(t) ? `${mark}${t}` : `${mark}(${t})`;
}

const rules = {
  skip: SKIP,
  spaced: new Set(['p', 'list-item', 'title', 'def', 'term']),
  special(el: XmlElement): string | undefined {
    switch (el.name) {
      case 'xref': {
        const type = el.attrs['ref-type'];
        // Numbered citations ('[3]', '[3]–[5]', superscript 12) carry no meaning in plain text; author-year ones read as prose.
        if (type === 'bibr' && CITATION_TEXT.test(rawText(el))) return CITE;
        if (type === 'fn' || type === 'table-fn') return '';
        return undefined;
      }
      case 'inline-formula':
        return formula(el, false);
      case 'disp-formula':
        return ` ${formula(el, true)} `;
      case 'alternatives':
        return formula(el, false);
      default:
        return undefined;
    }
  },
};

const formulaRules = {
  ...rules,
  special(el: XmlElement): string | undefined {
    if (el.name === 'sup') return script(el, '^');
    if (el.name === 'sub') return script(el, '_');
    return rules.special(el);
  },
};

function inline(node: XmlNode): string {
  return inlineText(node, rules);
}

/** A paragraph's text: inline markup flattened, whitespace collapsed, numbered citations and their brackets removed. */
function prose(node: XmlNode): string {
  return tidy(dropCitations(inline(node).replace(/\s+/g, ' ')));
}

/**
 * Nesting of blocks (lists in lists, boxes in boxes, sections in sections) read as structure;
 * anything deeper is read as running text. With the parser's own bound this keeps every walk here
 * shallow, whatever the input.
 */
const MAX_BLOCK_DEPTH = 48;

/** Block-level content as paragraphs, in document order; sections are walked separately. */
function blocks(nodes: readonly XmlNode[], depth = 0): string[] {
  const out: string[] = [];
  for (const n of nodes) {
    if (typeof n === 'string') {
      if (n.trim()) out.push(prose(n));
      continue;
    }
    try {
      block(n, out, depth);
    } catch (e) {
      throw markFault(e, n);
    }
  }
  // eLife ends each abstract and digest with its own 'DOI: http://dx.doi.org/…' line.
  return out.filter((p) => p.length > 0 && !/^DOI: \S+$/.test(p));
}

function block(n: XmlElement, out: string[], depth: number): void {
  if (SKIP.has(n.name) || n.name === 'sec' || n.name === 'title') return;
  if (depth >= MAX_BLOCK_DEPTH) {
    out.push(prose(n));
    return;
  }
  switch (n.name) {
    case 'list':
      out.push(
        childElements(n, 'list-item')
          .map((item) => blocks(item.children, depth + 1).join(' '))
          .filter(Boolean)
          .join('\n'),
      );
      break;
    case 'disp-formula':
      out.push(formula(n, true));
      break;
    case 'def-list':
      out.push(
        childElements(n, 'def-item')
          .map((d) =>
            [prose(child(d, 'term') ?? d), blocks(child(d, 'def')?.children ?? [], depth + 1).join(' ')].join(
              ': ',
            ),
          )
          .join('\n'),
      );
      break;
    case 'boxed-text':
    case 'disp-quote':
    case 'statement':
    case 'glossary':
    case 'notes': {
      const caption = child(n, 'caption');
      const title = child(n, 'title') ?? child(caption, 'title');
      if (title) out.push(prose(title));
      // The caption's own paragraphs (its title is read above), then the content.
      if (caption) out.push(...blocks(caption.children, depth + 1));
      out.push(
        ...blocks(
          n.children.filter((c) => c !== caption),
          depth + 1,
        ),
      );
      break;
    }
    default:
      out.push(prose(n));
  }
}

function sectionTitle(sec: XmlElement): string {
  const title = child(sec, 'title');
  return cleanInline(title ? prose(title) : '') || cleanInline(rawText(child(sec, 'label')));
}

// Administrative sections: who paid, who did what, which files exist. No biology to ask about.
const ADMIN_HEADING =
  /^(acknowledge?ments?|competing interests?|conflicts? of interests?|declaration of interests?|authors?['’]? contributions?|contributions|funding( information| statement)?|financial disclosure|abbreviations|supporting information|supplementary (material|information|data)|additional (files|information)|data availability( statement)?|disclosure statement|online supplemental material)$/i;

/** Sections in document order, nested ones flattened with 'Parent / Child' headings. */
function sectionsOf(container: XmlElement, path: readonly string[], out: Section[], depth = 0): void {
  let pending: string[] = [];
  const flush = () => {
    if (pending.length) out.push({ heading: path.join(' / '), text: pending.join('\n\n') });
    pending = [];
  };
  for (const c of container.children) {
    if (typeof c === 'string') {
      pending.push(...blocks([c], depth));
      continue;
    }
    try {
      if ((c.name === 'sec' || c.name === 'app') && depth < MAX_BLOCK_DEPTH) {
        flush();
        const title = sectionTitle(c);
        if (ADMIN_HEADING.test(title) || c.attrs['sec-type'] === 'supplementary-material') continue;
        sectionsOf(c, title ? [...path, title] : path, out, depth + 1);
      } else if (c.name === 'app-group' && depth < MAX_BLOCK_DEPTH) {
        flush();
        sectionsOf(c, path, out, depth + 1);
      } else if (c.name === 'sec' || c.name === 'app' || c.name === 'app-group') {
        // Sections nested past the bound: their text joins the section they sit in.
        pending.push(prose(c));
      } else {
        pending.push(...blocks([c], depth));
      }
    } catch (e) {
      throw markFault(e, c);
    }
  }
  flush();
}

/** A structured abstract reads 'Background: …' paragraph by paragraph, as MEDLINE's labelled ones do. */
function abstractText(abs: XmlElement, depth = 0): string {
  const parts: string[] = [];
  for (const c of abs.children) {
    if (typeof c !== 'string' && c.name === 'sec' && depth < MAX_BLOCK_DEPTH) {
      const title = sectionTitle(c);
      const body = abstractText(c, depth + 1);
      if (body) parts.push(title ? `${title}: ${body}` : body);
    } else if (typeof c !== 'string' && c.name === 'sec') {
      parts.push(prose(c));
    } else if (!(typeof c !== 'string' && c.name === 'title')) {
      parts.push(...blocks([c], depth));
    }
  }
  return parts.join('\n\n');
}

// Abstracts that are blurbs or pictures; author summaries and eLife digests are real prose and become sections.
const MINOR_ABSTRACTS = new Set(['toc', 'teaser', 'graphical', 'web-summary', 'precis', 'short']);

function abstracts(meta: XmlElement | undefined): { abstract: string; extra: Section[] } {
  const all = select(meta, 'abstract');
  const main =
    all.find((a) => !a.attrs['abstract-type']) ??
    all.find((a) => !MINOR_ABSTRACTS.has(a.attrs['abstract-type'] ?? ''));
  const extra: Section[] = [];
  for (const a of all) {
    if (a === main || MINOR_ABSTRACTS.has(a.attrs['abstract-type'] ?? '')) continue;
    const heading = cleanInline(prose(child(a, 'title') ?? '')) || (a.attrs['abstract-type'] ?? 'Summary');
    const text = abstractText(a);
    if (text) extra.push({ heading, text });
  }
  return { abstract: main ? abstractText(main) : '', extra };
}

function ids(meta: XmlElement | undefined) {
  const byType = new Map<string, string>();
  for (const id of select(meta, 'article-id')) {
    const type = (id.attrs['pub-id-type'] ?? '').toLowerCase();
    if (!byType.has(type)) byType.set(type, rawText(id).trim());
  }
  return {
    doi: byType.get('doi') ?? null,
    pmid: byType.get('pmid') ?? null,
    pmcid: normalisePmcid(byType.get('pmcid') ?? byType.get('pmc') ?? null),
  };
}

/** Electronic before print before the issue ('collection'): the date the article was first public. */
function dateRank(d: XmlElement): number {
  const type = d.attrs['pub-type'] ?? d.attrs['date-type'] ?? '';
  const format = d.attrs['publication-format'] ?? '';
  if (type === 'epub' || (type === 'pub' && format === 'electronic')) return 0;
  if (type === 'ppub' || (type === 'pub' && format === 'print')) return 1;
  if (type === 'pub') return 1;
  if (type === 'epub-ppub') return 2;
  if (type === 'collection') return 3;
  return 4;
}

function published(meta: XmlElement | undefined): string | null {
  const dates = select(meta, 'pub-date')
    .map((d) => ({
      rank: dateRank(d),
      date: partialDate(rawText(child(d, 'year')), rawText(child(d, 'month')), rawText(child(d, 'day'))),
    }))
    .filter((d) => d.date !== null)
    .sort((a, b) => a.rank - b.rank);
  return dates[0]?.date ?? null;
}

function licence(meta: XmlElement | undefined): string | null {
  const lic = first(meta, 'permissions/license');
  if (!lic) {
    // JATS 1.1+ may put ali:license_ref straight under permissions.
    const ref = select(meta, 'permissions').flatMap((p) =>
      childElements(p).filter((c) => localName(c.name) === 'license_ref'),
    )[0];
    return ref ? rawText(ref).trim() || null : null;
  }
  const ref = childElements(lic).find((c) => localName(c.name) === 'license_ref');
  const href = attr(lic, 'href');
  const text = childElements(lic, 'license-p').map(prose).join(' ');
  return (ref && rawText(ref).trim()) || href?.trim() || text || null;
}

function journal(front: XmlElement | undefined): string | null {
  const jm = first(front, 'journal-meta');
  const title = first(jm, 'journal-title-group/journal-title') ?? first(jm, 'journal-title');
  if (title) return prose(title) || null;
  const ids = select(jm, 'journal-id');
  const nlm = ids.find((i) => i.attrs['journal-id-type'] === 'nlm-ta') ?? ids[0];
  return nlm ? rawText(nlm).trim() || null : null;
}

function captions(article: XmlElement): CaptionT[] {
  const out: CaptionT[] = [];
  const roots = ['body', 'back', 'floats-group']
    .map((n) => child(article, n))
    .filter((e): e is XmlElement => !!e);
  const stop = new Set(['ref-list', 'sub-article']);
  for (const root of roots) {
    const floats: { kind: 'figure' | 'table'; el: XmlElement }[] = [];
    forEachDescendant(root, (c) => {
      if (stop.has(c.name)) return false;
      if (c.name === 'fig') floats.push({ kind: 'figure', el: c });
      else if (c.name === 'table-wrap') floats.push({ kind: 'table', el: c });
      return true;
    });
    for (const { kind, el } of floats) {
      const caption = child(el, 'caption');
      const parts = caption
        ? [child(caption, 'title'), ...childElements(caption, 'p')]
            .filter((e): e is XmlElement => !!e)
            .map(prose)
        : [];
      const text = parts.filter(Boolean).join(' ');
      if (!text) continue;
      const label = child(el, 'label');
      out.push({ kind, label: label ? cleanInline(rawText(label)) || null : null, text });
    }
  }
  return out;
}

/** One JATS <article> element as an article draft. */
export function jatsToDraft(article: XmlElement, sourceUri?: string): ArticleDraft {
  const front = child(article, 'front');
  const meta = first(front, 'article-meta');
  const titleGroup = first(meta, 'title-group');
  const title = prose(child(titleGroup, 'article-title') ?? '');
  const subtitle = prose(child(titleGroup, 'subtitle') ?? '');
  const { abstract, extra } = abstracts(meta);
  const sections: Section[] = [...extra];
  const body = child(article, 'body');
  if (body) sectionsOf(body, [], sections);
  const back = child(article, 'back');
  if (back) {
    // Back matter holds methods and appendices in some journals; acknowledgements, notes and references are not prose to learn from.
    const kept = back.children.filter(
      (c) => typeof c !== 'string' && (c.name === 'sec' || c.name === 'app-group'),
    );
    sectionsOf({ ...back, children: kept }, [], sections);
  }
  return {
    source: 'jats',
    ...(sourceUri ? { sourceUri } : {}),
    ...ids(meta),
    title: subtitle ? `${title}: ${subtitle}` : title,
    abstract,
    sections,
    captions: captions(article),
    keywords: select(meta, 'kwd-group/kwd').map(prose),
    mesh: [],
    publicationTypes: [],
    journal: journal(front),
    published: published(meta),
    licence: licence(meta),
  };
}

/** How a fault names a JATS record: its DOI, else PMID, else PMC id, else any article-id it has. */
export function jatsRecordLabel(article: XmlElement): string | null {
  const all = select(article, 'front/article-meta/article-id')
    .map((id) => ({ type: id.attrs['pub-id-type'] ?? 'id', value: rawText(id).trim() }))
    .filter((id) => id.value);
  const rank = (t: string) => {
    const i = ['doi', 'pmid', 'pmcid', 'pmc'].indexOf(t);
    return i < 0 ? 9 : i;
  };
  const best = all.sort((a, b) => rank(a.type) - rank(b.type))[0];
  return best ? `${best.type} ${best.value}` : null;
}

export const JATS: XmlFormat = {
  processor: JATS_PROCESSOR,
  // One <article> at the root, a <pmc-articleset> of them, or articles under any wrapper (OAI-PMH…).
  recordsAt: new Set(['article']),
  toDraft: (record, sourceUri) => jatsToDraft(record, sourceUri),
  recordLabel: jatsRecordLabel,
};

/**
 * Reads a JATS file (one <article>, a <pmc-articleset> of them, or <article>s under any wrapper)
 * article by article. Never throws.
 */
export function readJats(src: ByteSource, opts: XmlReaderOptions = {}): AsyncGenerator<SourceItem> {
  return readXml(src, JATS, opts);
}
