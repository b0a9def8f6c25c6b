import type { Section } from '../schemas/article.js';
import { type ByteSource, byteChunks } from './bytes.js';
import { textChunks } from './decode.js';
import { DEFAULT_MAX_BYTES, deadLetter, finishedItem, labelOf, reasonOf, type SourceItem } from './items.js';
import {
  GENERIC_MAPPING,
  type JsonlMapping,
  type JsonlMappingChoice,
  looksLikeS2orc,
  resolveMapping,
  S2ORC_MAPPING,
} from './jsonl-mapping.js';
import { lines } from './lines.js';
import {
  type ArticleDraft,
  CITATION_TEXT,
  CITE,
  dropCitations,
  finishArticle,
  parseDate,
  stripMarkup,
} from './normalise.js';
import { fromAnnotated } from './s2orc.js';
import { articleIdOf } from './works.js';

/**
 * JSON Lines, one article per line, through a field mapping (presets: s2orc, generic). A bad
 * line (not JSON, not an object, no title, abstract or text: 'no text') is one dead letter
 * citing its line number; the lines after it are still read. A line with only a title is an article.
 */
export const JSONL_PROCESSOR = 'sources/jsonl';

export interface JsonlOptions {
  path?: string;
  mapping?: JsonlMappingChoice;
  /** A longer line is a dead letter, skipped without being held; default 50 MB. */
  maxLineBytes?: number;
}

type Json = unknown;

function isObject(v: Json): v is Record<string, Json> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Follows a dot path; a key that is not there exactly is looked up case-insensitively ('DOI' vs 'doi'). */
function at(record: Json, path: string): Json {
  let v: Json = record;
  for (const key of path.split('.')) {
    if (Array.isArray(v) && /^\d+$/.test(key)) v = v[Number(key)];
    else if (isObject(v)) {
      if (key in v) v = v[key];
      else {
        const lower = key.toLowerCase();
        const found = Object.keys(v).find((k) => k.toLowerCase() === lower);
        v = found === undefined ? undefined : v[found];
      }
    } else return undefined;
  }
  return v;
}

function textOf(v: Json, paragraphBreak?: string): string {
  if (typeof v === 'string') return paragraphBreak ? v.split(paragraphBreak).join('\n\n') : v;
  if (typeof v === 'number') return String(v);
  if (Array.isArray(v))
    return v
      .map((x) => textOf(x, paragraphBreak))
      .filter(Boolean)
      .join('\n\n');
  if (isObject(v)) return textOf(v.text ?? v.name ?? null, paragraphBreak);
  return '';
}

function firstValue(record: Json, paths: readonly string[] | undefined): Json {
  for (const p of paths ?? []) {
    const v = at(record, p);
    if (v !== undefined && v !== null && v !== '' && !(Array.isArray(v) && v.length === 0)) return v;
  }
  return undefined;
}

const str = (record: Json, paths: readonly string[] | undefined, paragraphBreak?: string) =>
  stripMarkup(textOf(firstValue(record, paths), paragraphBreak)).trim();

/** Cuts numbered citations ('[13', '15]' in S2ORC) out of a paragraph by their character spans. */
function withoutCitations(text: string, spans: Json): string {
  if (!Array.isArray(spans)) return text;
  const cuts = spans
    .filter(
      (c): c is { start: number; end: number; text?: unknown } =>
        isObject(c) && Number.isInteger(c.start) && Number.isInteger(c.end),
    )
    .filter(
      (c) =>
        c.start >= 0 &&
        c.end <= text.length &&
        c.start < c.end &&
        CITATION_TEXT.test(text.slice(c.start, c.end)),
    )
    .sort((a, b) => b.start - a.start);
  let out = text;
  for (const c of cuts) out = out.slice(0, c.start) + CITE + out.slice(c.end);
  return dropCitations(out);
}

function sectionsOf(record: Json, m: JsonlMapping): Section[] {
  const out: Section[] = [];
  const list = m.sections ? firstValue(record, m.sections.path) : undefined;
  if (Array.isArray(list) && m.sections) {
    const { heading: headingKey, text: textKey, citeSpans } = m.sections;
    for (const p of list) {
      const heading = stripMarkup(textOf(at(p, headingKey))).trim();
      const raw = textOf(at(p, textKey));
      const text = stripMarkup(citeSpans ? withoutCitations(raw, at(p, citeSpans)) : raw).trim();
      if (!text) continue;
      const last = out[out.length - 1];
      // S2ORC body_text is a list of paragraphs: consecutive paragraphs of one section make one section.
      if (last && last.heading === heading) last.text += `\n\n${text}`;
      else out.push({ heading, text });
    }
  }
  const text = str(record, m.text);
  if (text) out.push({ heading: '', text });
  return out;
}

function keywordsOf(v: Json): string[] {
  if (Array.isArray(v)) return v.map((x) => textOf(x)).filter(Boolean);
  if (typeof v === 'string')
    return v
      .split(/[;\n]/)
      .map((s) => s.trim())
      .filter(Boolean);
  return [];
}

/** One parsed JSON record as an article draft, through a mapping. */
export function jsonToDraft(record: Record<string, Json>, m: JsonlMapping, sourceUri?: string): ArticleDraft {
  let title = str(record, m.title);
  let abstract = str(record, m.abstract, m.paragraphBreak);
  let sections = sectionsOf(record, m);
  const full = m.annotated ? firstValue(record, m.annotated.text) : undefined;
  const annotations = m.annotated ? firstValue(record, m.annotated.annotations) : undefined;
  if (typeof full === 'string' && isObject(annotations)) {
    const a = fromAnnotated(full, annotations);
    title ||= a.title;
    abstract ||= a.abstract;
    if (sections.length === 0) sections = a.sections;
  }
  const id = (paths: readonly string[] | undefined) => str(record, paths) || null;
  return {
    source: m.source,
    ...(sourceUri ? { sourceUri } : {}),
    doi: id(m.doi),
    pmid: id(m.pmid),
    pmcid: id(m.pmcid),
    title,
    abstract,
    sections,
    keywords: keywordsOf(firstValue(record, m.keywords)),
    journal: str(record, m.journal) || null,
    published: parseDate(firstValue(record, m.published)),
    licence: str(record, m.licence) || null,
    relatedIds: relatedIdsOf(firstValue(record, m.related)),
  };
}

/** A relation's value as article ids: a DOI, PMID or PMCID, or a list of them; anything else is no id. */
function relatedIdsOf(v: Json | undefined): string[] {
  const values = Array.isArray(v) ? v : v === undefined || v === null ? [] : [v];
  return values.flatMap((x) => {
    const id = articleIdOf(textOf(x));
    return id ? [id] : [];
  });
}

/** Streams a JSONL file (plain or gzipped), one item per non-blank line. Never throws. */
export async function* readJsonl(src: ByteSource, opts: JsonlOptions = {}): AsyncGenerator<SourceItem> {
  const path = labelOf(src, opts.path);
  const processor = JSONL_PROCESSOR;
  let mapping: JsonlMapping | 'auto';
  try {
    mapping = resolveMapping(opts.mapping);
  } catch (e) {
    yield deadLetter({
      path,
      position: null,
      code: 'unknown-format',
      reason: (e as Error).message,
      processor,
    });
    return;
  }
  let sawLine = false;
  let lastLine = 0;
  try {
    for await (const line of lines(textChunks(byteChunks(src)), opts.maxLineBytes ?? DEFAULT_MAX_BYTES)) {
      lastLine = line.number;
      const position = `line ${line.number}`;
      if (line.kind === 'too-long') {
        sawLine = true;
        yield deadLetter({
          path,
          position,
          code: 'too-large',
          reason: `line over the size limit: ${line.length} characters`,
          processor,
        });
        continue;
      }
      if (!line.text.trim()) continue;
      sawLine = true;
      let record: Json;
      try {
        record = JSON.parse(line.text);
      } catch (e) {
        yield deadLetter({
          path,
          position,
          code: 'malformed',
          reason: `invalid JSON: ${(e as Error).message}`,
          processor,
          payload: line.text,
        });
        continue;
      }
      if (!isObject(record)) {
        yield deadLetter({
          path,
          position,
          code: 'malformed',
          reason: 'not a JSON object',
          processor,
          payload: line.text,
        });
        continue;
      }
      const m = mapping === 'auto' ? (looksLikeS2orc(record) ? S2ORC_MAPPING : GENERIC_MAPPING) : mapping;
      yield finishedItem(finishArticle(jsonToDraft(record, m, path)), {
        path,
        position,
        processor,
        payload: line.text,
      });
    }
    if (!sawLine)
      yield deadLetter({ path, position: null, code: 'empty-file', reason: 'empty file', processor });
  } catch (e) {
    const fault = reasonOf(e);
    yield deadLetter({ path, processor, ...fault, position: fault.position ?? `line ${lastLine + 1}` });
  }
}
