import { RULES } from './rules.js';

// From an output to what the rules read: the text after the reasoning, folded (Unicode, LaTeX,
// markdown) to plain ASCII, and cut into tokens and sentences. The anchoring step (anchor.ts)
// runs between folding and cutting, so an accepted form is one token however it is punctuated.

/** The text after the last </think>; an unclosed <think> leaves nothing to grade. */
export function finalText(output: string): string {
  const text = output.replace(/\r\n?/g, '\n');
  const close = [...text.matchAll(/<\/think>/gi)].at(-1);
  if (close) return text.slice(close.index + close[0].length);
  return /<think>/i.test(text) ? '' : text;
}

const LOOKALIKE = /([A-Za-z]-|[A-Za-z]-?[0-9])([abgdk])(?![a-z])/g;
/** Gene symbols write the letter as a capital after the digit: IL1B = IL-1β, HIF1A = HIF-1α. */
const LOOKALIKE_CAPITAL = /([A-Za-z]-?[0-9])([ABGDK])(?![A-Za-z0-9])/g;
const ROMAN: Record<string, number> = { I: 1, II: 2, III: 3, IV: 4, V: 5, VI: 6, VII: 7 };
const TEXT_MACRO =
  /\\(?:text|textit|textrm|textbf|mathrm|mathit|mathbf|emph|mbox|operatorname|ce)\s*\{([^{}]*)\}/g;

// dayFirst: a date is written day, month, year ("April 6, 1917", "6th of April, 1917" = "6 April
// 1917"), so a reference dated to the month ("April 1917") or the day in either order is found in
// an answer that writes the date either way, and one to another day or year is not.
const MONTH = `(${[...RULES.months].map((m) => m[0]!.toUpperCase() + m.slice(1)).join('|')})\\.?`;
const MONTH_DAY_YEAR = new RegExp(`\\b${MONTH} ([0-9]{1,2})(?:st|nd|rd|th)?,? ([0-9]{4})\\b`, 'g');
const DAY_OF_MONTH_YEAR = new RegExp(`\\b([0-9]{1,2})(?:st|nd|rd|th)? (?:of )?${MONTH},? ([0-9]{4})\\b`, 'g');

/**
 * Unicode and LaTeX folded to what the tokenizer reads: control characters gone (the anchor's
 * marks use two), accents dropped, Greek letters spelled out (and Latin look-alikes after a
 * name's hyphen or digit: NF-kB = NF-κB), typographic quotes, primes, dashes and spaces made
 * ASCII, \text{} unwrapped, markdown emphasis gone.
 */
export function prepare(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the anchor's marks are control characters: an output may carry none
  let s = text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, ' ');
  // Superscript exponents ("10⁻³") would fold to plain digits ("10-3"): mark them first.
  s = s.replace(/[\u2070\u00b9\u00b2\u00b3\u2074-\u2079\u207a\u207b]+/g, (m) => `^${m.normalize('NFKD')}`);
  s = s.normalize('NFKD').replace(/[\u0300-\u036f]/g, '');
  s = s.replace(/[\u00a0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff]/g, ' ');
  s = s.replace(/[\u2018\u2019\u02bc\u2032]/g, "'").replace(/[\u2212\u2010-\u2015]/g, '-');
  s = s.replace(/[\u0391-\u03a9\u03b1-\u03c9]/g, (ch) => RULES.greek[ch.toLowerCase()] ?? ch);
  s = s.replace(
    LOOKALIKE,
    (_m, name: string, letter: string) => name + RULES.greekLookalikes.letters[letter],
  );
  s = s.replace(
    LOOKALIKE_CAPITAL,
    (_m, name: string, letter: string) => name + RULES.greekLookalikes.letters[letter.toLowerCase()],
  );
  s = s.replace(/([A-Za-z]-)K(?=B(?![a-z]))/g, '$1kappa');
  // Charges as pluses ("Fe+++" = "Fe3+"), primes spelled ("3 prime" = "3'").
  s = s.replace(
    /([A-Za-z])(\+{2,3})(?!\+)/g,
    (_m, before: string, signs: string) => `${before}${signs.length}+`,
  );
  s = s.replace(/([0-9])[ -]?prime\b/gi, "$1'");
  // Oxidation states and markers in words: "Fe(III)" = "Fe3+", "CD4-positive" = "CD4+".
  s = s.replace(
    /\b([A-Z][a-z]?)\((I{1,3}|IV|VI{0,2})\)/g,
    (_m, element: string, roman: string) => `${element}${ROMAN[roman]}+`,
  );
  s = s.replace(/([0-9])[- ]?positive\b/g, '$1+').replace(/([0-9])[- ]?negative\b/g, '$1-');
  s = s.replace(/([\^_])\{([^{}]*)\}/g, '$1$2');
  for (let k = 0; k < 2; k++) s = s.replace(TEXT_MACRO, '$1');
  s = s
    .replace(/\\%/g, '%')
    .replace(/\\(?:times|cdot)/g, '×')
    .replace(/\\[,;:! ]/g, ' ');
  s = s.replace(/[*#`]/g, ' ');
  s = s.replace(/(^|[^A-Za-z0-9_])_{1,2}([^_\n]+?)_{1,2}(?![A-Za-z0-9_])/g, '$1$2');
  s = s.replace(MONTH_DAY_YEAR, '$2 $1 $3').replace(DAY_OF_MONTH_YEAR, '$1 $2 $3');
  return s.replace(/n't\b/gi, ' not');
}

// Footnote marks glued to what they annotate: "in 1953[2]", "[1, 4]", "[2-5]", and a superscript
// after a year ("1953²", which prepare folds to "1953^2"). Left in, "1953[2]" reads as two values
// and "1953^2" as a power.
const FOOTNOTE_BRACKET = /(?<=[A-Za-z0-9.,;:)'])\[\d{1,3}(?: *[,-] *\d{1,3})*\]/g;
const FOOTNOTE_AFTER_YEAR = /\b(1[0-9]{3}|20[0-9]{2})\^[0-9]{1,2}(?![0-9]|\.[0-9])/g;

/** The prepared text without footnote marks (a named step of its own: see score.ts). */
export function dropFootnotes(text: string): string {
  return text.replace(FOOTNOTE_BRACKET, '').replace(FOOTNOTE_AFTER_YEAR, '$1');
}

/** Contents of every \boxed{...} (nested braces allowed), in order. */
export function boxed(text: string): string[] {
  const out: string[] = [];
  const re = /\\boxed\s*\{/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    let depth = 1;
    let i = m.index + m[0].length;
    const start = i;
    for (; i < text.length && depth > 0; i++) {
      if (text[i] === '{') depth++;
      else if (text[i] === '}') depth--;
    }
    if (depth === 0) out.push(text.slice(start, i - 1));
  }
  return out;
}

export const ANSWER_PHRASE =
  /\b(?:final\s+answer|correct\s+answer|correct\s+option|correct\s+choice|answer|option|choice)\s*(?:is|would\s+be|will\s+be|should\s+be|:|=|-)\s*([^\n]*)/gi;

/**
 * A line that opens by stating the answer ("Solution: Choice_C", "Final answer: B"); what follows
 * the label is the answer.
 */
export const ANSWER_LABEL = new RegExp(
  `^[\\s>-]*(?:${RULES.answerLabels.map((p) => p.replace(/ /g, '\\s+')).join('|')})\\s*(?:is|:|=|-)\\s*`,
  'i',
);

const REVISION = new RegExp(
  `\\b(?:${RULES.revisions.map((p) => p.replace(/ /g, '\\s+')).join('|')})\\b`,
  'gi',
);

/** What follows the last phrase that takes back what came before it, or the whole text. */
export function afterRevision(text: string): string {
  const last = [...text.matchAll(REVISION)].at(-1);
  return last ? text.slice(last.index + last[0].length) : text;
}

// ---------------------------------------------------------------------------------------------
// Tokens

export interface Token {
  /** A form is an accepted form the anchor marked: its text is what it stands for. */
  readonly kind: 'word' | 'num' | 'punct' | 'form';
  /** As written (words keep their case: option letters are capitals). */
  readonly text: string;
  /** Lower case; for numbers the digits without thousands separators. */
  readonly key: string;
  /** Whitespace (or markup) before it. */
  readonly space: boolean;
  /** A number's value, or a number word's (zero to twenty). */
  readonly value: number | null;
  /** A number glued to a word by a hyphen ("IL-6", "COVID-19"): part of a name. */
  readonly attached: boolean;
  /** A form written as a proper name ("Seymour Hersh"): see anchor.ts writtenAsName. */
  readonly name: boolean;
}

/** Punctuation kept as tokens; any other symbol only separates words. */
const SIGNIFICANT = new Set([...",;:.!?/-()%&+=<>~±'≤≥"]);
const NUMBER = /(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|\.\d+/y;
const SCIENTIFIC = /\s*[x×]\s*10\s*\^\s*\{?\s*([-+]?\d+)\s*\}?/y;
const POWER_OF_TEN = /\s*\^\s*\{?\s*([-+]?\d+)\s*\}?/y;
const FRACTION = /\/(\d+)(?!\d|[.,]\d)/y;
const LETTERS_RUN = /[A-Za-z]+/y;
const WORD = /[A-Za-z0-9]+/y;
const SIGN_AFTER = new Set([...'([{=:~<>≈≤≥']);
/** The anchor's mark of an accepted form: \u0001, what it stands for, \u0002. */
export const MARK_OPEN = '\u0001';
export const MARK_CLOSE = '\u0002';
/** Opens a mark's content when the occurrence is written as a proper name (anchor.ts writtenAsName). */
export const MARK_NAME = '\u0003';

const isSpace = (ch: string) => ch === ' ' || ch === '\t' || ch === '\n' || ch === '\f' || ch === '\v';
export const isDigit = (ch: string | undefined) => ch !== undefined && ch >= '0' && ch <= '9';
export const isAlnum = (ch: string | undefined) =>
  ch !== undefined && ((ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z'));

/** One line of prepared text as tokens. */
export function tokenize(line: string): Token[] {
  const out: Token[] = [];
  let space = true;
  let i = 0;
  const push = (
    kind: Token['kind'],
    text: string,
    key: string,
    value: number | null,
    attached: boolean,
    name = false,
  ) => {
    out.push({ kind, text, key, space, value, attached, name });
    space = false;
  };
  while (i < line.length) {
    const ch = line[i]!;
    if (isSpace(ch)) {
      space = true;
      i++;
      continue;
    }
    if (ch === MARK_OPEN) {
      const close = line.indexOf(MARK_CLOSE, i);
      const name = line[i + 1] === MARK_NAME;
      const stands = line.slice(i + (name ? 2 : 1), close);
      push('form', stands, MARK_OPEN + stands, null, false, name);
      i = close + 1;
      continue;
    }
    const signed =
      (ch === '-' || ch === '+') &&
      (i === 0 || isSpace(line[i - 1]!) || SIGN_AFTER.has(line[i - 1]!)) &&
      isDigit(line[i + 1] === '.' ? line[i + 2] : line[i + 1]);
    const start = signed ? i + 1 : i;
    NUMBER.lastIndex = start;
    const m = isDigit(line[start]) || line[start] === '.' ? NUMBER.exec(line) : null;
    if (m) {
      let end = start + m[0].length;
      let value = Number(m[0].replace(/,/g, ''));
      let key = m[0].replace(/,/g, '');
      FRACTION.lastIndex = end;
      const frac = /^\d+$/.test(m[0]) ? FRACTION.exec(line) : null;
      if (frac && Number(frac[1]) !== 0) {
        value /= Number(frac[1]);
        key += `/${frac[1]}`;
        end += frac[0].length;
      }
      SCIENTIFIC.lastIndex = end;
      POWER_OF_TEN.lastIndex = end;
      const sci = frac ? null : m[0] === '10' ? POWER_OF_TEN.exec(line) : SCIENTIFIC.exec(line);
      if (sci && m[0] === '10') {
        value = Number(`1e${sci[1]}`);
        key += `^${sci[1]}`;
        end += sci[0].length;
      } else if (sci) {
        value *= Number(`1e${sci[1]}`);
        key += `e${sci[1]}`;
        end += sci[0].length;
      }
      LETTERS_RUN.lastIndex = end;
      const glued = LETTERS_RUN.exec(line)?.[0];
      if (glued === undefined || (RULES.units.has(glued) && !isAlnum(line[end + glued.length]))) {
        if (signed && ch === '-') value = -value;
        const prev = out.at(-1);
        const attached =
          !space &&
          (prev?.key === '-' || prev?.key === '/') &&
          !prev.space &&
          out.at(-2)?.kind === 'word' &&
          !signed;
        push('num', line.slice(i, end), (signed ? ch : '') + key, value, attached);
        i = end;
        continue;
      }
      // A number glued to letters that are no unit is a name: "16S", "5S", "3D".
    }
    if (isAlnum(ch)) {
      WORD.lastIndex = i;
      const word = WORD.exec(line)![0];
      const key = word.toLowerCase();
      const n = RULES.numberWords.indexOf(key);
      push('word', word, key, n >= 0 ? n : null, false);
      i += word.length;
      continue;
    }
    if (SIGNIFICANT.has(ch)) push('punct', ch, ch, null, false);
    else space = true;
    i++;
  }
  return out;
}

export const isWord = (t: Token | undefined) => t !== undefined && t.kind !== 'punct';

/**
 * A line's sentences. A full stop after a lone letter or a number ends no sentence ("C. Golgi",
 * "A. B. C.", "3. 4."), so a list of candidates stays one sentence.
 */
export function sentencesOf(text: string): Token[][] {
  const out: Token[][] = [];
  for (const line of text.split('\n')) {
    const tokens = tokenize(line);
    let current: Token[] = [];
    tokens.forEach((t, i) => {
      current.push(t);
      const next = tokens[i + 1];
      if (t.kind !== 'punct' || !'.!?'.includes(t.key) || (next !== undefined && !next.space)) return;
      const prev = tokens[i - 1];
      if (
        t.key === '.' &&
        prev !== undefined &&
        (prev.kind === 'num' || (prev.kind === 'word' && prev.text.length === 1))
      )
        return;
      out.push(current);
      current = [];
    });
    out.push(current);
  }
  return out.filter((s) => s.some(isWord));
}

export const isQuestion = (sentence: Token[]) => sentence.at(-1)?.key === '?';
