import { attr, localName, markFault, rawText, type XmlElement, type XmlNode } from './xml.js';

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

/** MathML as text: its alttext when given (often TeX), else a linear reading of its layout ('x^2 + y'). */
export function mathmlText(el: XmlElement): string {
  const alt = attr(el, 'alttext')?.trim();
  if (alt) return alt;
  return linearMathml(el);
}

// Operators read with a space either side: 'a + b', 'x ≤ 3'.
const SPACED_OPS = new Set([...'+-−–=≠<>≤≥≦≧⩽⩾≈≃≅≡∼~±∓×·⋅∙÷→←↔⇒⇐⇔↦∈∉⊂⊆⊃⊇∪∩∝≪≫∧∨', ':=']);
// Elements that print nothing: other encodings of the same formula, spacing, invisible content.
const MATH_SILENT = new Set([
  'annotation',
  'annotation-xml',
  'mphantom',
  'none',
  'mprescripts',
  'malignmark',
  'maligngroup',
]);
const MATH_TOKENS = new Set(['mi', 'mn', 'mo', 'mtext', 'ms', 'mglyph']);
// Accents above or below a base, written after it ('x¯', 'v→').
const ACCENTS = /^[¯‾^ˆ~˜˙¨.→←´`ˇ˘_]$/;

/** A script or operand that is more than one symbol goes in brackets: x^(n + 1), (a + b)/2. */
function group(s: string): string {
  const t = s.trim();
  if (/^[\p{L}\p{N}.′″'*∗∞]+$/u.test(t) || /^[-−+]?\p{N}+(?:\.\p{N}+)?$/u.test(t)) return t;
  if (/^\(.*\)$/.test(t) && balanced(t.slice(1, -1))) return t;
  return `(${t})`;
}

function balanced(s: string): boolean {
  let depth = 0;
  for (const ch of s) {
    if (ch === '(') depth++;
    else if (ch === ')' && --depth < 0) return false;
  }
  return depth === 0;
}

function mathToken(el: XmlElement, name: string, first: boolean): string {
  const t = rawText(el)
    .replace(/[\u2061-\u2064]/g, '')
    .replace(/\s+/g, ' ')
    .trim();
  if (name === 'mo') {
    if (!t) return '';
    if (t === ',' || t === ';') return `${t} `;
    if (SPACED_OPS.has(t)) return first && /^[-−+±–]$/.test(t) ? t : ` ${t} `;
    return t;
  }
  // Words in mtext ('if', 'for all') stay words.
  if (name === 'mtext' && /\p{L}{2}/u.test(t)) return ` ${t} `;
  return t;
}

/** How a layout element reads, given its children's readings in order. */
function combineMath(name: string, el: XmlElement, parts: string[]): string {
  const p = (i: number) => parts[i] ?? '';
  switch (name) {
    case 'msup':
      return `${p(0)}^${group(p(1))}`;
    case 'msub':
      return `${p(0)}_${group(p(1))}`;
    case 'msubsup':
      return `${p(0)}_${group(p(1))}^${group(p(2))}`;
    case 'munder':
      return `${p(0)}_${group(p(1))}`;
    case 'mover':
      return ACCENTS.test(p(1).trim()) ? `${p(0)}${p(1).trim()}` : `${p(0)}^${group(p(1))}`;
    case 'munderover':
      return `${p(0)}_${group(p(1))}^${group(p(2))}`;
    case 'mfrac':
      return `${group(p(0))}/${group(p(1))}`;
    case 'msqrt':
      return `sqrt(${parts.join('').trim()})`;
    case 'mroot':
      return `root(${p(1).trim()}, ${p(0).trim()})`;
    case 'mfenced': {
      const open = el.attrs.open ?? '(';
      const close = el.attrs.close ?? ')';
      const sep = (el.attrs.separators ?? ',').trim().charAt(0);
      return `${open}${parts.map((x) => x.trim()).join(sep ? `${sep} ` : ' ')}${close}`;
    }
    case 'mtable':
      return parts
        .map((x) => x.trim())
        .filter(Boolean)
        .join('; ');
    case 'mtr':
      return parts
        .map((x) => x.trim())
        .filter(Boolean)
        .join(', ');
    case 'mlabeledtr':
      return parts
        .slice(1)
        .map((x) => x.trim())
        .filter(Boolean)
        .join(', ');
    case 'semantics':
    case 'maction':
      return p(0);
    case 'mmultiscripts': {
      let out = p(0);
      for (let i = 1; i + 1 < parts.length; i += 2) {
        if (parts[i]!.trim()) out += `_${group(parts[i]!)}`;
        if (parts[i + 1]!.trim()) out += `^${group(parts[i + 1]!)}`;
      }
      return out;
    }
    case 'mspace':
      return ' ';
    default:
      return parts.join('');
  }
}

/**
 * MathML layout as one line of text: 'x^2 + y', '(a + b)/2', 'sqrt(x)', 'x_i'. Iterative (an
 * explicit stack), so no depth of nesting can overflow; elements of other vocabularies met
 * inside (a tex-math, say) read as their text.
 */
export function linearMathml(el: XmlElement): string {
  const els: XmlElement[] = [el];
  const at: number[] = [0];
  const parts: string[][] = [[]];
  let result = '';
  while (els.length > 0) {
    const top = els.length - 1;
    const parent = els[top]!;
    const i = at[top]!;
    if (i < parent.children.length) {
      at[top] = i + 1;
      const c = parent.children[i]!;
      const siblings = parts[top]!;
      if (typeof c === 'string') {
        const t = c.trim();
        if (t) siblings.push(t);
        continue;
      }
      const name = localName(c.name);
      if (MATH_SILENT.has(name)) {
        siblings.push('');
      } else if (MATH_TOKENS.has(name)) {
        siblings.push(
          mathToken(
            c,
            name,
            siblings.every((x) => !x.trim()),
          ),
        );
      } else if (name === 'tex-math') {
        siblings.push(texOf(c));
      } else {
        els.push(c);
        at.push(0);
        parts.push([]);
      }
      continue;
    }
    const done = combineMath(localName(parent.name), parent, parts[top]!);
    els.pop();
    at.pop();
    parts.pop();
    if (els.length === 0) result = done;
    else parts[top - 1]!.push(done);
  }
  return result
    .replace(/\s+/g, ' ')
    .replace(/([([]) /g, '$1')
    .replace(/ ([)\]])/g, '$1')
    .trim();
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

// Re-entries through rules.special (a formula rendering its own children) are bounded too: past
// this many, special rules are no longer consulted and the shared rules alone apply.
const MAX_NESTING = 16;
let nesting = 0;

const PLAIN = 0;
const SPACED = 1;
const SUP = 2;

/**
 * Inline markup to text with an explicit stack instead of recursion, so no depth of input can
 * overflow. Anything thrown is marked with the element being read (see markFault), so the reader
 * can say where in the record it failed.
 */
function render(root: XmlNode, rules: InlineRules, childrenOnly: boolean): string {
  if (typeof root === 'string') return root;
  const special = nesting < MAX_NESTING ? rules.special : undefined;
  const skip = rules.skip;
  const spaced = rules.spaced;
  nesting++;
  let out = '';
  const els: XmlElement[] = [];
  const at: number[] = [];
  const modes: number[] = [];
  const saved: string[] = [];
  let current: XmlElement = root;
  let next: XmlNode | undefined;
  try {
    if (childrenOnly) {
      els.push(root);
      at.push(0);
      modes.push(PLAIN);
      saved.push('');
    } else next = root;
    for (;;) {
      if (next !== undefined) {
        const n = next;
        next = undefined;
        if (typeof n === 'string') out += n;
        else if (!skip?.has(n.name)) {
          current = n;
          const sp = special?.(n);
          const name = n.name;
          if (sp !== undefined) out += sp;
          else if (name === 'tex-math') out += `$${texOf(n)}$`;
          else if (name === 'break' || name === 'br') out += ' ';
          else if (localName(name) === 'math') out += mathmlText(n);
          else if (n.children.length > 0) {
            if (name === 'sup') {
              modes.push(SUP);
              saved.push(out);
              out = '';
            } else if (spaced?.has(name)) {
              modes.push(SPACED);
              saved.push('');
              out += ' ';
            } else {
              modes.push(PLAIN);
              saved.push('');
            }
            els.push(n);
            at.push(0);
          } else if (spaced?.has(name)) out += '  ';
        }
      }
      const top = els.length - 1;
      if (top < 0) break;
      const el = els[top]!;
      const i = at[top]!;
      if (i < el.children.length) {
        at[top] = i + 1;
        next = el.children[i];
        continue;
      }
      current = el;
      els.pop();
      at.pop();
      const mode = modes.pop();
      const before = saved.pop()!;
      if (mode === SUP) {
        // Pretty-printed XML puts a newline between '10' and its <sup>: the exponent still belongs to it.
        const sup = out.trim();
        const trimmed = before.trimEnd();
        const joined = joinSup(trimmed, sup);
        out = joined.startsWith('^') ? trimmed + joined : before + joined;
      } else if (mode === SPACED) out += ' ';
    }
  } catch (e) {
    throw markFault(e, current);
  } finally {
    nesting--;
  }
  return out;
}

const NO_RULES: InlineRules = {};

export function inlineText(node: XmlNode, rules: InlineRules = NO_RULES): string {
  return render(node, rules, false);
}

/** The inline text of an element's content, the element itself not consulted (no skip, no special rule for it). */
export function inlineChildren(el: XmlElement, rules: InlineRules = NO_RULES): string {
  return render(el, rules, true);
}
