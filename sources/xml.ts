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
   * The element names that are records, found wherever they sit: the root itself (a single JATS
   * article, a bare MedlineCitation), its children (PubmedArticleSet, pmc-articleset), or deeper
   * under any wrapper an export put around the set. Inside a record nothing is a new record.
   */
  records: ReadonlySet<string>;
  /** A record longer than this many characters is skipped and reported, never held whole. */
  maxRecordChars?: number;
}

/**
 * Elements nested deeper than this below their record are not built as elements: their text joins
 * the element at this depth. Real articles stay far below it (MathML reaches a few dozen levels);
 * it bounds every walk over a record's tree, whatever the input.
 */
export const MAX_TREE_DEPTH = 256;

// Named entities that turn up in publisher XML without their DTD; undefined ones are kept as text.
const HTML_ENTITIES: Record<string, string> = {
  nbsp: '\u00a0',
  shy: '\u00ad',
  zwj: '\u200d',
  zwnj: '\u200c',
  lrm: '\u200e',
  rlm: '\u200f',
  ndash: '–',
  mdash: '—',
  hellip: '…',
  thinsp: '\u2009',
  hairsp: '\u200a',
  ensp: '\u2002',
  emsp: '\u2003',
  lsquo: '‘',
  rsquo: '’',
  sbquo: '‚',
  ldquo: '“',
  rdquo: '”',
  bdquo: '„',
  laquo: '«',
  raquo: '»',
  lsaquo: '‹',
  rsaquo: '›',
  iexcl: '¡',
  iquest: '¿',
  cent: '¢',
  pound: '£',
  euro: '€',
  yen: '¥',
  curren: '¤',
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
  sim: '∼',
  cong: '≅',
  equiv: '≡',
  prop: '∝',
  infin: '∞',
  sum: '∑',
  prod: '∏',
  int: '∫',
  radic: '√',
  part: '∂',
  nabla: '∇',
  isin: '∈',
  notin: '∉',
  cap: '∩',
  cup: '∪',
  sub: '⊂',
  sup: '⊃',
  sube: '⊆',
  supe: '⊇',
  and: '∧',
  or: '∨',
  not: '¬',
  forall: '∀',
  exist: '∃',
  empty: '∅',
  perp: '⊥',
  ang: '∠',
  lowast: '∗',
  oplus: '⊕',
  otimes: '⊗',
  sdot: '⋅',
  lceil: '⌈',
  rceil: '⌉',
  lfloor: '⌊',
  rfloor: '⌋',
  lang: '⟨',
  rang: '⟩',
  middot: '·',
  bull: '•',
  prime: '′',
  Prime: '″',
  permil: '‰',
  dagger: '†',
  Dagger: '‡',
  copy: '©',
  reg: '®',
  trade: '™',
  sect: '§',
  para: '¶',
  ordf: 'ª',
  ordm: 'º',
  sup1: '¹',
  sup2: '²',
  sup3: '³',
  frac14: '¼',
  frac12: '½',
  frac34: '¾',
  acute: '´',
  uml: '¨',
  macr: '¯',
  cedil: '¸',
  larr: '←',
  rarr: '→',
  harr: '↔',
  uarr: '↑',
  darr: '↓',
  lArr: '⇐',
  rArr: '⇒',
  hArr: '⇔',
  auml: 'ä',
  ouml: 'ö',
  uuml: 'ü',
  euml: 'ë',
  iuml: 'ï',
  yuml: 'ÿ',
  aacute: 'á',
  eacute: 'é',
  iacute: 'í',
  oacute: 'ó',
  uacute: 'ú',
  yacute: 'ý',
  agrave: 'à',
  egrave: 'è',
  igrave: 'ì',
  ograve: 'ò',
  ugrave: 'ù',
  acirc: 'â',
  ecirc: 'ê',
  icirc: 'î',
  ocirc: 'ô',
  ucirc: 'û',
  atilde: 'ã',
  otilde: 'õ',
  ntilde: 'ñ',
  aring: 'å',
  aelig: 'æ',
  oslash: 'ø',
  ccedil: 'ç',
  szlig: 'ß',
  eth: 'ð',
  thorn: 'þ',
  Auml: 'Ä',
  Ouml: 'Ö',
  Uuml: 'Ü',
  Aacute: 'Á',
  Eacute: 'É',
  Iacute: 'Í',
  Oacute: 'Ó',
  Uacute: 'Ú',
  Agrave: 'À',
  Egrave: 'È',
  Ntilde: 'Ñ',
  Ccedil: 'Ç',
  Aring: 'Å',
  AElig: 'Æ',
  Oslash: 'Ø',
  // MathML's invisible operators, as older PMC files spell them.
  InvisibleTimes: '\u2062',
  it: '\u2062',
  ApplyFunction: '\u2061',
  af: '\u2061',
  InvisibleComma: '\u2063',
  ic: '\u2063',
};
// Greek, both cases, by the HTML names.
{
  const greek =
    'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigmaf sigma tau upsilon phi chi psi omega';
  const lower = 'αβγδεζηθικλμνξοπρςστυφχψω';
  const upper = 'ΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡ΢ΣΤΥΦΧΨΩ';
  greek.split(' ').forEach((name, i) => {
    HTML_ENTITIES[name] = lower[i]!;
    if (name !== 'sigmaf') HTML_ENTITIES[name[0]!.toUpperCase() + name.slice(1)] = upper[i]!;
  });
  HTML_ENTITIES.thetasym = 'ϑ';
  HTML_ENTITIES.upsih = 'ϒ';
  HTML_ENTITIES.piv = 'ϖ';
}

// Faults saxes reports but can read past: kept as text, never worth losing a file over.
const TOLERATED = /undefined entity|malformed character entity|disallowed character/;

/** The longest replacement text an internal subset may declare for one entity, and how many. */
export const MAX_ENTITY_CHARS = 64;
export const MAX_DECLARED_ENTITIES = 1024;

/**
 * Why a DOCTYPE's internal subset is refused, or null. Entities that stand for a character or a
 * short string (what exports declare for &nbsp; and the like) are read; anything that could expand
 * or reach outside the file is refused before a single reference is resolved: external entities
 * (SYSTEM / PUBLIC, file:// or http://: never opened or fetched), parameter entities, entities
 * that refer to other entities (billion laughs) and long replacement texts (quadratic blow-up).
 */
export function refusedDoctype(doctype: string): string | null {
  const open = doctype.indexOf('[');
  if (open < 0) return null; // only an external DTD's name (JATS files carry one): never read
  const subset = doctype.slice(open);
  const decls = subset.match(/<!ENTITY\b[^>]*>?/g) ?? [];
  if (decls.length > MAX_DECLARED_ENTITIES)
    return `${decls.length} entity declarations (at most ${MAX_DECLARED_ENTITIES})`;
  for (const d of decls) {
    const name = /<!ENTITY\s+(%\s*)?([^\s"'>]+)/.exec(d);
    const label = name ? `"${name[2]}"` : 'without a name';
    if (name?.[1]) return `parameter entity ${label}`;
    const quoted = /^<!ENTITY\s+[^\s"'>]+\s+(?:"([^"]*)"|'([^']*)')\s*>$/.exec(d);
    if (!quoted) {
      const external = /\b(SYSTEM|PUBLIC)\b\s*(?:"([^"]*)"|'([^']*)')?/.exec(d);
      if (!external) return `entity declaration ${label} not understood`;
      const target = external[2] ?? external[3];
      return `external entity ${label} (${external[1]}${target === undefined ? '' : ` ${target}`}), never fetched`;
    }
    const value = quoted[1] ?? quoted[2] ?? '';
    if (/&[^#\s;]+;|%[^\s;]+;/.test(value))
      return `entity ${label} refers to other entities (nested expansion)`;
    if (value.length > MAX_ENTITY_CHARS)
      return `entity ${label} of ${value.length} characters (at most ${MAX_ENTITY_CHARS})`;
  }
  return null;
}

/** General entities an internal DTD subset declares (`<!ENTITY name "value">`), numeric references resolved. */
function declaredEntities(doctype: string): Record<string, string> {
  const out: Record<string, string> = {};
  const decl = /<!ENTITY\s+([^\s%"'>]+)\s+(?:"([^"]*)"|'([^']*)')\s*>/g;
  for (let m = decl.exec(doctype); m; m = decl.exec(doctype)) {
    const value = (m[2] ?? m[3] ?? '').replace(/&#(x[0-9a-f]+|\d+);/gi, (ref, n: string) => {
      const code = n[0] === 'x' || n[0] === 'X' ? Number.parseInt(n.slice(1), 16) : Number(n);
      try {
        return String.fromCodePoint(code);
      } catch {
        return ref;
      }
    });
    out[m[1]!] = value;
  }
  return out;
}

const XML_PREDEFINED: Readonly<Record<string, true>> = {
  amp: true,
  lt: true,
  gt: true,
  quot: true,
  apos: true,
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
  const records = opts.records;
  let depth = 0;
  let sawRoot = false;
  // The depth of the record being built; -1 between records.
  let recordDepth = -1;
  let index = 0;
  let stack: XmlElement[] = [];
  // Elements open beyond MAX_TREE_DEPTH, not built: their text goes to the deepest built element.
  let flattened = 0;
  let recordStart = 0;
  let recordText = 0;
  let recordLine = 0;
  let recordName = '';
  let oversize = false;

  parser.on('error', (err) => {
    // A missing DTD entity or a stray control character is not worth losing a file over; everything else is.
    if (TOLERATED.test(err.message)) return;
    throw err;
  });
  parser.on('doctype', (doctype: string) => {
    const refused = refusedDoctype(doctype);
    if (refused !== null)
      throw new SourceError('refused-xml', `refused XML: ${refused}`, where(), doctype.slice(0, 2048));
    // Entities an internal subset declares (&nbsp; and the like in some exports) read as declared.
    const declared = declaredEntities(doctype);
    for (const [name, value] of Object.entries(declared))
      if (!(name in XML_PREDEFINED)) parser.ENTITIES[name] = value;
  });
  parser.on('opentag', (tag: SaxesTagPlain) => {
    depth++;
    if (!sawRoot) {
      sawRoot = true;
      pending.push({ kind: 'root', name: tag.name });
    }
    if (recordDepth < 0) {
      if (!records.has(tag.name)) return;
      recordDepth = depth;
      index++;
      stack = [];
      flattened = 0;
      oversize = false;
      recordStart = parser.position;
      recordText = 0;
      recordLine = parser.line;
      recordName = tag.name;
    }
    if (oversize) return;
    if (parser.position - recordStart > max) {
      oversize = true;
      stack = [];
      return;
    }
    if (stack.length >= MAX_TREE_DEPTH) {
      flattened++;
      return;
    }
    const el: XmlElement = { name: tag.name, attrs: tag.attributes, children: [] };
    stack[stack.length - 1]?.children.push(el);
    stack.push(el);
  });
  const onText = (text: string) => {
    if (stack.length === 0 || oversize) return;
    // Text counts as well as input: declared entities make text longer than the markup it came from.
    recordText += text.length;
    if (parser.position - recordStart > max || recordText > max) {
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
      recordDepth = -1;
    } else if (recordDepth >= 0 && !oversize) {
      if (flattened > 0) flattened--;
      else stack.pop();
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
    throw new SourceError(
      'malformed',
      `malformed XML: ${stripSaxesPrefix((e as Error).message)}`,
      where(),
      context(),
    );
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
        throw new SourceError(e.code, e.reason, joinPosition(where(), e.position), e.payload);
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

/**
 * Every descendant with this name, in document order, not descending into matches (nor into
 * elements named in stopAt). Iterative: no depth of input can overflow the stack.
 */
export function descendants(el: XmlElement, name: string, stopAt?: ReadonlySet<string>): XmlElement[] {
  const out: XmlElement[] = [];
  forEachDescendant(el, (c) => {
    if (c.name === name) {
      out.push(c);
      return false;
    }
    return !stopAt?.has(c.name);
  });
  return out;
}

/** The first descendant (document order) that matches, or undefined. Iterative. */
export function firstDescendant(
  el: XmlElement,
  match: (e: XmlElement) => boolean,
  stopAt?: ReadonlySet<string>,
): XmlElement | undefined {
  let found: XmlElement | undefined;
  forEachDescendant(el, (c) => {
    if (found) return false;
    if (match(c)) {
      found = c;
      return false;
    }
    return !stopAt?.has(c.name);
  });
  return found;
}

/** What walk() calls on the way through a tree; every handler is optional. */
export interface WalkHandlers {
  /** A descendant element, with the chain of elements above it (el first); false skips its children. */
  enter?(child: XmlElement, ancestors: readonly XmlElement[]): boolean;
  text?(text: string): void;
  /** An element whose children are done, el itself last. */
  exit?(el: XmlElement): void;
}

/**
 * Walks el's tree in document order with an explicit stack, never recursion, so no depth of
 * input can overflow: the one traversal the helpers below share.
 */
export function walk(el: XmlElement, on: WalkHandlers): void {
  const els: XmlElement[] = [el];
  const at: number[] = [0];
  while (els.length > 0) {
    const top = els.length - 1;
    const parent = els[top]!;
    const i = at[top]!;
    if (i >= parent.children.length) {
      on.exit?.(parent);
      els.pop();
      at.pop();
      continue;
    }
    at[top] = i + 1;
    const c = parent.children[i]!;
    if (typeof c === 'string') on.text?.(c);
    else if ((on.enter?.(c, els) ?? true) && c.children.length > 0) {
      els.push(c);
      at.push(0);
    } else on.exit?.(c);
  }
}

/** Visits the descendant elements of el in document order; visit returns false to skip an element's children. */
export function forEachDescendant(el: XmlElement, visit: (e: XmlElement) => boolean): void {
  walk(el, { enter: visit });
}

/** An attribute by local name, whatever its prefix (xlink:href, ali:…). */
export function attr(el: XmlElement, name: string): string | undefined {
  const direct = el.attrs[name];
  if (direct !== undefined) return direct;
  for (const [k, v] of Object.entries(el.attrs)) if (localName(k) === name) return v;
  return undefined;
}

/** All character data below el, concatenated as is. Iterative. */
export function rawText(el: XmlElement | undefined): string {
  if (!el) return '';
  const only = el.children.length === 1 ? el.children[0] : undefined;
  if (typeof only === 'string') return only;
  let s = '';
  walk(el, {
    text: (t) => {
      s += t;
    },
  });
  return s;
}

const escText = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function openTag(el: XmlElement): string {
  let attrs = '';
  for (const [k, v] of Object.entries(el.attrs)) attrs += ` ${k}="${escText(v).replace(/"/g, '&quot;')}"`;
  return `<${el.name}${attrs}>`;
}

/** Serialises a record back to XML for a dead letter's payload. Iterative. */
export function toXml(el: XmlElement): string {
  const parts: string[] = [openTag(el)];
  walk(el, {
    enter: (c) => {
      parts.push(openTag(c));
      return true;
    },
    text: (t) => parts.push(escText(t)),
    exit: (e) => parts.push(`</${e.name}>`),
  });
  return parts.join('');
}

// ---- where a fault happened: the element a walker was at when something threw ----

const faultAt = new WeakMap<object, XmlElement>();

/**
 * Records that e was thrown while el was being read, unless an inner walker already did (the
 * innermost element wins). Returns what to rethrow: e itself, or an Error for a thrown non-object.
 */
export function markFault(e: unknown, el: XmlElement): unknown {
  const err = typeof e === 'object' && e !== null ? e : new Error(String(e));
  if (!faultAt.has(err)) faultAt.set(err, el);
  return err;
}

/** The element markFault recorded for a thrown value, if any. */
export function faultElement(e: unknown): XmlElement | undefined {
  return typeof e === 'object' && e !== null ? faultAt.get(e) : undefined;
}

/** Runs fn over el; anything it throws is marked as happening at el (unless marked deeper). */
export function within<T>(el: XmlElement, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw markFault(e, el);
  }
}

/**
 * The path from root to target as 'article/body/sec[3]/p[2]/inline-formula': an index where the
 * parent has several children of that name. Null when target is not in root's tree. Iterative.
 */
export function elementPath(root: XmlElement, target: XmlElement): string | null {
  const step = (parent: XmlElement | undefined, el: XmlElement) => {
    if (!parent) return el.name;
    let n = 0;
    let pos = 0;
    for (const c of parent.children)
      if (typeof c !== 'string' && c.name === el.name) {
        n++;
        if (c === el) pos = n;
      }
    return n > 1 ? `${el.name}[${pos}]` : el.name;
  };
  if (root === target) return root.name;
  let chain: XmlElement[] | null = null;
  walk(root, {
    enter: (c, ancestors) => {
      if (chain) return false;
      if (c === target) chain = [...ancestors, c];
      return chain === null;
    },
  });
  if (chain === null) return null;
  const found: XmlElement[] = chain;
  return found.map((e, k) => step(found[k - 1], e)).join('/');
}
