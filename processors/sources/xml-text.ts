import { attr, localName, rawText, type XmlElement, type XmlNode } from './xml.js';

/**
 * Inline markup to plain text, shared by the JATS and MEDLINE readers: italics, bold and the like
 * vanish, superscripts stay readable, maths becomes TeX when the source has it.
 */
export interface InlineRules {
  /** Elements whose whole content is dropped (figures inside paragraphs, footnote markers…). */
  readonly skip?: ReadonlySet<string>;
  /** Block-ish elements met inside running text (a paragraph in a list item): kept apart by spaces. */
  readonly spaced?: ReadonlySet<string>;
  /** Source-specific rendering; undefined falls back to the shared rules. */
  readonly special?: (el: XmlElement) => string | undefined;
}

/**
 * A superscript after a digit is an exponent ('10<sup>−6</sup>' -> '10^−6'); elsewhere it is a
 * charge or a marker and reads fine inline ('Ca<sup>2+</sup>' -> 'Ca2+', 'CD4<sup>+</sup>').
 */
function joinSup(before: string, sup: string): string {
  return /\d$/.test(before) && /^[-−+]?\d/.test(sup) ? `^${sup}` : sup;
}

/** The TeX inside a tex-math element, unwrapped from the \documentclass scaffolding PMC puts around it. */
export function texOf(el: XmlElement): string {
  let tex = rawText(el);
  const body = /\\begin\{document\}([\s\S]*?)\\end\{document\}/.exec(tex);
  if (body) tex = body[1]!;
  tex = tex.trim();
  for (const [open, close] of [
    ['$$', '$$'],
    ['\\[', '\\]'],
    ['$', '$'],
    ['\\(', '\\)'],
  ] as const) {
    if (tex.startsWith(open) && tex.endsWith(close) && tex.length >= open.length + close.length) {
      tex = tex.slice(open.length, tex.length - close.length).trim();
      break;
    }
  }
  return tex.replace(/\s+/g, ' ');
}

/** MathML as text: its alttext when given (often TeX), else the characters of its tokens. */
export function mathmlText(el: XmlElement): string {
  const alt = attr(el, 'alttext')?.trim();
  if (alt) return alt;
  return rawText(el).replace(/\s+/g, '');
}

/**
 * Whitespace as a reader expects it after markup is gone: one space, none just inside brackets or
 * before a comma or full stop (pretty-printed XML leaves '( FAM210A' and 'ETS2 ,').
 */
export function tidy(s: string): string {
  return s
    .replace(/\s+/g, ' ')
    .replace(/([([]) /g, '$1')
    .replace(/ ([)\]])/g, '$1')
    .replace(/ ([,;:.])(?=\s|$)/g, '$1')
    .trim();
}

interface Acc {
  out: string;
}

function render(n: XmlNode, rules: InlineRules): string {
  const acc: Acc = { out: '' };
  walk(n, rules, acc);
  return acc.out;
}

// Module-level rather than closures made per call: this runs for every text-bearing element of every record.
function walk(n: XmlNode, rules: InlineRules, acc: Acc): void {
  if (typeof n === 'string') {
    acc.out += n;
    return;
  }
  if (rules.skip?.has(n.name)) return;
  const special = rules.special?.(n);
  if (special !== undefined) {
    acc.out += special;
    return;
  }
  const name = n.name;
  if (name === 'sup') {
    let sup = '';
    for (const c of n.children) sup += render(c, rules);
    sup = sup.trim();
    // Pretty-printed XML puts a newline between '10' and its <sup>: the exponent still belongs to it.
    const before = acc.out.trimEnd();
    const joined = joinSup(before, sup);
    acc.out = joined.startsWith('^') ? before + joined : acc.out + joined;
  } else if (name === 'tex-math') {
    acc.out += `$${texOf(n)}$`;
  } else if (name === 'break' || name === 'br') {
    acc.out += ' ';
  } else if (localName(name) === 'math') {
    acc.out += mathmlText(n);
  } else if (rules.spaced?.has(name)) {
    acc.out += ' ';
    for (const c of n.children) walk(c, rules, acc);
    acc.out += ' ';
  } else {
    for (const c of n.children) walk(c, rules, acc);
  }
}

const NO_RULES: InlineRules = {};

export function inlineText(node: XmlNode, rules: InlineRules = NO_RULES): string {
  return render(node, rules);
}
