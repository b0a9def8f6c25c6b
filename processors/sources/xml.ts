import { SaxesParser, type SaxesTagPlain } from 'saxes';
import { joinPosition, SourceError } from './items.js';

/** A small element tree: built only for one record at a time, so memory follows the record, not the file. */
export interface XmlElement {
  readonly name: string;
  readonly attrs: Readonly<Record<string, string>>;
  readonly children: XmlNode[];
}
export type XmlNode = XmlElement | string;

export type XmlEvent =
  | { kind: 'root'; name: string }
  | { kind: 'record'; element: XmlElement; index: number; line: number }
  | { kind: 'oversize'; name: string; index: number; line: number; chars: number };

export interface XmlRecordOptions {
  /**
   * Given the root element's name, where records are: the root itself (a single JATS article),
   * its children (PubmedArticleSet, pmc-articleset), or nowhere (throw a SourceError).
   */
  recordsAt: (rootName: string) => 'root' | 'children';
  /** A record longer than this many characters is skipped and reported, never held whole. */
  maxRecordChars?: number;
}

// Named entities that turn up in publisher XML without their DTD; undefined ones are kept as text.
const HTML_ENTITIES: Record<string, string> = {
  nbsp: '\u00a0',
  ndash: '–',
  mdash: '—',
  hellip: '…',
  thinsp: '\u2009',
  ensp: '\u2002',
  emsp: '\u2003',
  lsquo: '‘',
  rsquo: '’',
  ldquo: '“',
  rdquo: '”',
  laquo: '«',
  raquo: '»',
  deg: '°',
  plusmn: '±',
  times: '×',
  divide: '÷',
  micro: 'µ',
  minus: '−',
  le: '≤',
  ge: '≥',
  ne: '≠',
  asymp: '≈',
  middot: '·',
  bull: '•',
  prime: '′',
  Prime: '″',
  copy: '©',
  reg: '®',
  trade: '™',
  sect: '§',
  para: '¶',
  alpha: 'α',
  beta: 'β',
  gamma: 'γ',
  delta: 'δ',
  epsilon: 'ε',
  kappa: 'κ',
  lambda: 'λ',
  mu: 'μ',
  pi: 'π',
  sigma: 'σ',
  tau: 'τ',
  phi: 'φ',
  chi: 'χ',
  omega: 'ω',
  Delta: 'Δ',
  Sigma: 'Σ',
  Omega: 'Ω',
  larr: '←',
  rarr: '→',
  harr: '↔',
  uarr: '↑',
  darr: '↓',
  auml: 'ä',
  ouml: 'ö',
  uuml: 'ü',
  eacute: 'é',
  egrave: 'è',
  aacute: 'á',
  iacute: 'í',
  oacute: 'ó',
  uacute: 'ú',
  ntilde: 'ñ',
  ccedil: 'ç',
  szlig: 'ß',
  Auml: 'Ä',
  Ouml: 'Ö',
  Uuml: 'Ü',
};

const stripSaxesPrefix = (message: string) => message.replace(/^(?:[^:\n]*:)?\d+:\d+: /, '');

/**
 * Streams XML text and yields each record as an element tree as soon as it closes. Malformed XML
 * throws a SourceError with line and column after every record before the fault has been yielded;
 * an error from the text underneath (bad encoding, truncated gzip) gets the XML line added.
 */
export async function* xmlRecords(
  chunks: AsyncIterable<string>,
  opts: XmlRecordOptions,
): AsyncGenerator<XmlEvent> {
  const parser = new SaxesParser({ xmlns: false, position: true });
  Object.assign(parser.ENTITIES, HTML_ENTITIES);
  const max = opts.maxRecordChars ?? Number.POSITIVE_INFINITY;
  const pending: XmlEvent[] = [];
  let depth = 0;
  let recordDepth = -1;
  let index = 0;
  let stack: XmlElement[] = [];
  let recordStart = 0;
  let recordLine = 0;
  let recordName = '';
  let oversize = false;

  parser.on('error', (err) => {
    // A missing DTD entity is not worth losing an article over; everything else is.
    if (/undefined entity/.test(err.message)) return;
    throw err;
  });
  parser.on('opentag', (tag: SaxesTagPlain) => {
    depth++;
    if (recordDepth < 0) {
      recordDepth = opts.recordsAt(tag.name) === 'root' ? 1 : 2;
      pending.push({ kind: 'root', name: tag.name });
    }
    if (depth === recordDepth) {
      index++;
      stack = [];
      oversize = false;
      recordStart = parser.position;
      recordLine = parser.line;
      recordName = tag.name;
    }
    if (depth < recordDepth || oversize) return;
    if (parser.position - recordStart > max) {
      oversize = true;
      stack = [];
      return;
    }
    const el: XmlElement = { name: tag.name, attrs: tag.attributes, children: [] };
    stack[stack.length - 1]?.children.push(el);
    stack.push(el);
  });
  const onText = (text: string) => {
    if (stack.length === 0 || oversize) return;
    if (parser.position - recordStart > max) {
      oversize = true;
      stack = [];
      return;
    }
    stack[stack.length - 1]!.children.push(text);
  };
  parser.on('text', onText);
  parser.on('cdata', onText);
  parser.on('closetag', () => {
    if (depth === recordDepth) {
      if (oversize) {
        pending.push({
          kind: 'oversize',
          name: recordName,
          index,
          line: recordLine,
          chars: parser.position - recordStart,
        });
      } else if (stack[0]) {
        pending.push({ kind: 'record', element: stack[0], index, line: recordLine });
      }
      stack = [];
    } else if (depth > recordDepth && !oversize) {
      stack.pop();
    }
    depth--;
  });

  const where = () => `line ${parser.line}, column ${parser.column}`;
  // The text around a fault goes into the dead letter, so it can be read without the file.
  let chunk = '';
  let chunkStart = 0;
  const context = () => {
    const at = parser.position - chunkStart;
    return chunk.slice(Math.max(0, at - 1024), at + 1024);
  };
  const fail = (e: unknown): never => {
    if (e instanceof SourceError) throw e;
    throw new SourceError(`malformed XML: ${stripSaxesPrefix((e as Error).message)}`, where(), context());
  };

  let sawText = false;
  const it = chunks[Symbol.asyncIterator]();
  try {
    for (;;) {
      let r: IteratorResult<string>;
      try {
        r = await it.next();
      } catch (e) {
        // The text underneath failed (bad encoding, truncated gzip): deliver what parsed, then say where.
        yield* pending.splice(0);
        if (!(e instanceof SourceError)) throw e;
        throw new SourceError(e.reason, joinPosition(where(), e.position), e.payload);
      }
      if (r.done) break;
      if (!sawText && /\S/.test(r.value)) sawText = true;
      chunkStart += chunk.length;
      chunk = r.value;
      let fault: unknown;
      try {
        parser.write(r.value);
      } catch (e) {
        fault = e;
      }
      yield* pending.splice(0);
      if (fault !== undefined) fail(fault);
    }
  } finally {
    await it.return?.();
  }
  // Nothing but whitespace: let the reader call it an empty file rather than malformed XML.
  if (!sawText) return;
  let fault: unknown;
  try {
    parser.close();
  } catch (e) {
    fault = e;
  }
  yield* pending.splice(0);
  if (fault !== undefined) fail(fault);
}

// ---- navigation: tiny XPath-ish helpers over XmlElement ----

export const isElement = (n: XmlNode): n is XmlElement => typeof n !== 'string';

/** The part after a namespace prefix: 'mml:math' -> 'math', 'xlink:href' -> 'href'. */
export const localName = (name: string) => name.slice(name.indexOf(':') + 1);

export function childElements(el: XmlElement, name?: string): XmlElement[] {
  const out: XmlElement[] = [];
  for (const c of el.children)
    if (typeof c !== 'string' && (name === undefined || c.name === name)) out.push(c);
  return out;
}

export function child(el: XmlElement | undefined, name: string): XmlElement | undefined {
  if (!el) return undefined;
  for (const c of el.children) if (typeof c !== 'string' && c.name === name) return c;
  return undefined;
}

/** Elements reached by a slash path of child names from el, e.g. 'front/article-meta/article-id'. */
const steps = new Map<string, string[]>();

export function select(el: XmlElement | undefined, path: string): XmlElement[] {
  if (!el) return [];
  let parts = steps.get(path);
  if (!parts) {
    parts = path.split('/');
    steps.set(path, parts);
  }
  let level = [el];
  for (const step of parts) {
    const next: XmlElement[] = [];
    for (const e of level)
      for (const c of e.children) if (typeof c !== 'string' && c.name === step) next.push(c);
    level = next;
  }
  return level;
}

export const first = (el: XmlElement | undefined, path: string): XmlElement | undefined =>
  select(el, path)[0];

/** Every descendant with this name, in document order, not descending into matches. */
export function descendants(el: XmlElement, name: string, stopAt?: ReadonlySet<string>): XmlElement[] {
  const out: XmlElement[] = [];
  const walk = (e: XmlElement) => {
    for (const c of e.children) {
      if (typeof c === 'string') continue;
      if (c.name === name) out.push(c);
      else if (!stopAt?.has(c.name)) walk(c);
    }
  };
  walk(el);
  return out;
}

/** An attribute by local name, whatever its prefix (xlink:href, ali:…). */
export function attr(el: XmlElement, name: string): string | undefined {
  const direct = el.attrs[name];
  if (direct !== undefined) return direct;
  for (const [k, v] of Object.entries(el.attrs)) if (localName(k) === name) return v;
  return undefined;
}

/** All character data below el, concatenated as is. */
export function rawText(el: XmlElement | undefined): string {
  if (!el) return '';
  let s = '';
  for (const c of el.children) s += typeof c === 'string' ? c : rawText(c);
  return s;
}

/** Serialises a record back to XML for a dead letter's payload. */
export function toXml(el: XmlElement): string {
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const attrs = Object.entries(el.attrs)
    .map(([k, v]) => ` ${k}="${esc(v).replace(/"/g, '&quot;')}"`)
    .join('');
  const inner = el.children.map((c) => (typeof c === 'string' ? esc(c) : toXml(c))).join('');
  return `<${el.name}${attrs}>${inner}</${el.name}>`;
}
