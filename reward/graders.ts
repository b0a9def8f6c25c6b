import type { RewardResult } from '../schemas/feeder.js';
import { ANSWER, binomialForms, type Form, formKey, remembered } from './anchor.js';
import { isShortForm, shorterNames, writtenForms } from './names.js';
import { RULES } from './rules.js';
import { isWord, prepare, type Token, tokenize } from './text.js';

// What counts as a candidate answer in a sentence, for each kind of reference, and how the
// candidates a place names decide the score.

const LETTERS = 'ABCDEFGHIJ';
/** Relative tolerance of a numeric free-form match (absolute below 1e-9). */
const NUMERIC_TOLERANCE = 0.01;

export interface Mention {
  /** The option letter, '@' for an accepted form of a free-form answer, or a number's key. */
  readonly value: string;
  readonly number: { value: number; percent: boolean } | null;
  /** "<", "at least", ...: the number is a bound, not a value. */
  readonly bound: string | null;
  readonly start: number;
  readonly end: number;
  /**
   * Beside another short item: in a hedge, joined by a disjunction ("increase or decrease", "E. coli
   * and/or S. aureus"), or in a list ("E. coli, S. aureus and B. subtilis"); null: alone.
   */
  readonly listed: Listing;
}

export type Listing = 'hedge' | 'list' | null;

/**
 * A grader's verdict; `undecided` when the rules cannot tell (a list may be what the question
 * asks for: "the cast includes A, B and C"): it scores 0 and goes to a verifier when there is one.
 */
export interface Verdict extends RewardResult {
  readonly undecided?: boolean;
}

export interface Grader {
  /** Free-form text: a box that names nothing known is another answer, not an empty one. */
  readonly text: boolean;
  /** Free-form: when the final sentence names no candidate, the whole answer is read (score.ts). */
  readonly wholeAnswer: boolean;
  /** What the anchor marks before the text is read. */
  readonly forms: readonly Form[];
  mentions(sentence: Token[]): Mention[];
  decide(found: Mention[], where: string): Verdict;
  /** More forms the output itself writes, found in its prepared text (see names.ts). */
  readonly written?: (text: string) => Form[];
  /** Free-form: another answer of the reference's kind in a place that names none (anotherYear). */
  readonly another?: (sentences: Token[][]) => string | null;
}

const isListSeparator = (t: Token | undefined) =>
  t !== undefined && (t.kind === 'punct' ? RULES.listPunctuation.has(t.key) : RULES.listWords.has(t.key));

/**
 * Another short item in a list right beside [start, end): "decrease" in "increase or decrease",
 * "S. aureus" in "E. coli, or maybe S. aureus", "E. coli and/or S. aureus", "E. coli (or S. aureus)".
 */
function listedBeside(tokens: Token[], start: number, end: number, regionAnswer = false): boolean {
  const competes = (
    item: Token[],
    separator: Token,
    after: Token | undefined,
    before: boolean,
    next: Token | undefined,
  ) => {
    const words = item.filter(isWord);
    if (words.length === 0) return false;
    if (RULES.continuations.has(words[0]!.key) || words.some((w) => RULES.negators.has(w.key))) return false;
    if (namesItAgain(words, before)) return false;
    if (separator.key === ',' && (apposition(words, after, next) || year(words))) return false;
    if (separator.key === ',' && placeAndRegion(words, before, regionAnswer)) return false;
    // What the item names, after the filler that opens it ("I believe it is E. coli or S. aureus").
    const opens = words.findIndex((w) => !RULES.fillers.has(w.key));
    return opens >= 0 && words.length - opens <= 4;
  };
  // A full stop after one letter abbreviates ("S. aureus"): it ends no item.
  const stops = (j: number) => {
    const t = tokens[j]!;
    if (t.key === '.' && tokens[j - 1]?.kind === 'word' && tokens[j - 1]!.text.length === 1) return false;
    return isListSeparator(t) || (t.kind === 'punct' && ',;:.!?('.includes(t.key));
  };
  const parens = (t: Token | undefined) => t !== undefined && '()'.includes(t.key);
  // After the first separator, more of them and a disjunction belong to it (", or", "and/or").
  const joins = (t: Token | undefined) =>
    t !== undefined &&
    (t.kind === 'punct' ? RULES.listPunctuation.has(t.key) || parens(t) : RULES.disjunctions.has(t.key));
  let j = end;
  while (parens(tokens[j])) j++;
  if (isListSeparator(tokens[j])) {
    const separator = tokens[j]!;
    for (j++; joins(tokens[j]); j++);
    const item: Token[] = [];
    for (; j < tokens.length && !stops(j); j++) item.push(tokens[j]!);
    if (competes(item, separator, tokens[j], false, tokens[j + 1])) return true;
  }
  j = start - 1;
  while (parens(tokens[j])) j--;
  if (isListSeparator(tokens[j])) {
    const separator = tokens[j]!;
    for (j--; joins(tokens[j]); j--);
    const item: Token[] = [];
    for (; j >= 0 && !stops(j); j--) item.unshift(tokens[j]!);
    if (competes(item, separator, tokens[end], true, tokens[end + 1])) return true;
  }
  return false;
}

/**
 * hedgeOrList: a listed answer is hedged when its sentence holds a disjunction or a slash ("A or B",
 * "A, B, or C", "A and/or B"): a policy offering candidates. A list without one ("the cast includes
 * A, B and C") may be what the question asks for, which the rules cannot tell: undecided.
 */
const hedgeOrList = (tokens: Token[]): Listing =>
  tokens.some((t) => t.key === '/' || (t.kind === 'word' && RULES.disjunctions.has(t.key)))
    ? 'hedge'
    : 'list';

/**
 * namesItAgain: the other item is another accepted form of the reference ("Dionysus (or Bacchus)",
 * "the god Bacchus or Dionysus"): one thing named twice, not two candidates. An item after the
 * reference is nothing but forms and filler; one before it (which runs back to where the sentence
 * starts) ends with a form right before the separator.
 */
const namesItAgain = (words: Token[], before: boolean) =>
  before
    ? words.at(-1)!.kind === 'form'
    : words.some((w) => w.kind === 'form') &&
      words.every((w) => w.kind === 'form' || RULES.fillers.has(w.key));

const ARTICLES = new Set(['a', 'an', 'the']);

/**
 * apposition: after a comma, a phrase that describes the answer ("Pour Moi, a French-bred colt",
 * "The Observer, published in London", "lignite, also known as brown coal", "Isaac Newton,
 * specifically ..."), or gives its title or place in a work ("Arthur Wellesley, 1st Duke of
 * Wellington", "the Gospel of Luke, chapter 2"), not another item: it opens with an apposition
 * word, a participle, a title (rules' titles) or an ordinal. One that opens with an article is a
 * list item when a list word follows it ("mitochondria, the nucleus and the ribosome"), unless it
 * is a description of three words or more that runs on after "and" with no article ("Isaac
 * Newton, a renowned mathematician and physicist").
 */
const apposition = (words: Token[], after: Token | undefined, next: Token | undefined) => {
  const first = words[0]!;
  // Written in lower case: "A. aaaaa" after a comma is a binomial, not the article.
  const describes =
    RULES.appositions.has(first.text) ||
    (first.key.length > 4 && /^[a-z]+ed$/.test(first.text)) ||
    RULES.titles.has(first.key) ||
    /^\d+(?:st|nd|rd|th)$/.test(first.key);
  if (!describes) return false;
  if (after === undefined || !RULES.listWords.has(after.key)) return true;
  if (!ARTICLES.has(first.text)) return after.key === 'and';
  return after.key === 'and' && words.length >= 3 && next !== undefined && !ARTICLES.has(next.key);
};

/** The words of an item or a form as the regions table writes them: lower case, no leading article. */
const regionKey = (words: readonly Token[]): string =>
  words
    .filter((w) => w.kind === 'word' || w.kind === 'num')
    .map((w) => w.key)
    .join(' ')
    .replace(/^(?:the|a|an) /, '');

const isRegion = (words: readonly Token[]) =>
  words.every((w) => w.kind !== 'form') && RULES.regions.has(regionKey(words));

/** A form that names a region of the table ("the United States", "Missouri"). */
const regionForm = remembered((form: string) => isRegion(tokenize(prepare(form))));

/**
 * placeAndRegion: a place, a comma and a region of the rules' table ("Rhodes, Greece", "Kansas
 * City, Missouri", "Selby, Yorkshire, England") says where the place lies: the region is no other
 * candidate beside the answer (the item after it), nor is the place beside a region that is the
 * answer (the item before it). Two regions ("France, Germany") or two places ("Paris, Lyon") stay
 * a list.
 */
const placeAndRegion = (words: readonly Token[], before: boolean, regionAnswer: boolean) =>
  before ? regionAnswer && !isRegion(words) : !regionAnswer && isRegion(words);

/** A year after a comma ("July 20, 1969"): a date, not another item, beside a text answer. */
const year = (words: Token[]) =>
  words.length === 1 && words[0]!.kind === 'num' && /^\d{4}$/.test(words[0]!.key);

const BOUND_SYMBOLS = new Set(RULES.bounds.symbols.split(' '));
const BOUND_PHRASES = RULES.bounds.phrases.map((p) => p.split(' '));

/** The bound written before the number at i ("<", "<=", "at least"), or null. */
function boundBefore(tokens: Token[], i: number): string | null {
  const prev = tokens[i - 1];
  if (prev?.kind === 'punct' && BOUND_SYMBOLS.has(prev.key)) return prev.key;
  const before = tokens[i - 2];
  if (prev?.key === '=' && before?.kind === 'punct' && BOUND_SYMBOLS.has(before.key)) return `${before.key}=`;
  for (const words of BOUND_PHRASES)
    if (i >= words.length && words.every((w, k) => tokens[i - words.length + k]!.key === w))
      return words.join(' ');
  return null;
}

/** The number at i with its units ("12.5 kDa", "25 %", "3-fold", "three copies"), or null. */
function numberAt(tokens: Token[], i: number): Mention | null {
  const t = tokens[i]!;
  if (t.value === null || (t.kind === 'num' && t.attached)) return null;
  let end = i + 1;
  let percent = false;
  let value = t.value;
  let key = t.key;
  const scale = tokens[end]?.kind === 'word' ? RULES.scales.get(tokens[end]!.key) : undefined;
  if (scale !== undefined) {
    value *= scale;
    key += ` ${tokens[end]!.key}`;
    end += 1;
  }
  for (let units = 0; units < 3 && end < tokens.length; units++) {
    const u = tokens[end]!;
    const unit = (w: Token | undefined) =>
      w !== undefined && w.kind === 'word' && (RULES.units.has(w.text) || RULES.unitWords.has(w.key));
    if (u.key === '±' && tokens[end + 1]?.kind === 'num') end += 2;
    else if (u.key === '%') end += 1;
    else if (unit(u)) end += 1;
    else if ((u.key === '/' || (u.key === '-' && !u.space)) && unit(tokens[end + 1])) end += 2;
    else break;
    const last = tokens[end - 1]!;
    if (last.key === '%' || last.key === 'percent' || last.key === 'cent') percent = true;
  }
  return {
    value: key,
    number: { value, percent },
    bound: boundBefore(tokens, i),
    start: i,
    end,
    listed: null,
  };
}

export function mcqGrader(truth: string, options: readonly string[]): Grader {
  const want = truth.trim().toUpperCase();
  const valid = options.length >= 2 ? LETTERS.slice(0, options.length) : LETTERS;
  // A one-letter option ("A", "C", "G", "T") is read as a letter, as the prompt asks for letters.
  // An abbreviation two options share ("E. coli" of Escherichia and Entamoeba coli) names neither.
  const written = options.slice(0, LETTERS.length).map((o) => (/^[a-z]?$/.test(formKey(o)) ? [] : [o]));
  const other = written.map((own) => binomialForms(own));
  const shared = (text: string) =>
    other.filter((forms) => forms.some((f) => formKey(f) === formKey(text))).length > 1;
  const forms: Form[] = written.flatMap((own, i) =>
    [...own, ...other[i]!.filter((f) => !shared(f))].map((text) => ({ text, stands: LETTERS[i]! })),
  );
  const letterAt = (tokens: Token[], i: number, words: number): string | null => {
    const t = tokens[i]!;
    if (t.kind !== 'word' || t.text.length !== 1 || !valid.includes(t.text.toUpperCase())) return null;
    const prev = tokens[i - 1];
    const next = tokens[i + 1];
    if (t.text === t.text.toUpperCase()) {
      if (prev?.kind === 'word' && RULES.letterPrefixes.has(prev.key)) return null;
      // A unit after a number ("25°C", "300 K") is no option.
      if (prev?.kind === 'num' && RULES.units.has(t.text)) return null;
      if (next?.kind === 'word' && next.space && /^[a-z]/.test(next.text) && !RULES.letterLinks.has(next.key))
        return null;
      const after = tokens[i + 2];
      if (next?.key === '.' && after?.kind === 'word' && after.space && /^[a-z]/.test(after.text))
        return null;
      return t.text;
    }
    // A lower-case letter is an option only where it cannot be a word: alone, "(c)", "c)", "option c".
    const alone = words === 1;
    const closed = next?.key === ')' && !next.space;
    const named = prev?.kind === 'word' && ['option', 'choice', 'answer'].includes(prev.key);
    return alone || closed || named ? t.text.toUpperCase() : null;
  };
  return {
    text: false,
    wholeAnswer: false,
    forms,
    mentions(tokens) {
      const out: Mention[] = [];
      const words = tokens.filter(isWord).length;
      tokens.forEach((t, i) => {
        const letter = t.kind === 'form' ? t.text : letterAt(tokens, i, words);
        if (letter)
          out.push({ value: letter, number: null, bound: null, start: i, end: i + 1, listed: null });
      });
      return out;
    },
    decide(found, where) {
      const named = [...new Set(found.map((m) => m.value))];
      if (named.length > 1) return { score: 0, reason: `${named.join(' and ')} named in the ${where}` };
      return named[0] === want
        ? { score: 1, reason: `${want} in the ${where}` }
        : { score: 0, reason: `${named[0]} in the ${where}, expected ${want}` };
    },
  };
}

/**
 * The ground truth's accepted forms: itself, its aliases, and for "term (bracket)" the term, and
 * the bracket when one is a short form of the other ("sinoatrial node (SA node)", "DNA
 * (deoxyribonucleic acid)"): a bracket that describes ("insulin (hormone)") names another thing.
 */
export function acceptedForms(truth: string, aliases: readonly string[]): string[] {
  const forms = [truth, ...aliases];
  for (const f of [truth, ...aliases]) {
    const m = /^(.+?)\s*\(([^()]+)\)\s*$/.exec(f);
    if (m) {
      forms.push(m[1]!);
      if (isShortForm(m[2]!, m[1]!) || isShortForm(m[1]!, m[2]!)) forms.push(m[2]!);
    }
  }
  return [...new Set(forms.map((f) => f.trim()).filter((f) => formKey(f) !== ''))];
}

interface Stated {
  readonly value: number;
  readonly percent: boolean;
  /** The number as written ("1953"). */
  readonly key: string;
  /** An integer counting things (a year, "46", "3 copies"): matched exactly, never within the tolerance. */
  readonly exact: boolean;
}

/**
 * The number a form states, when it is nothing but a number and its units ("37 °C", "25%"),
 * remembered: every accepted form of a reference is asked (counts), and a trainer scores several
 * rollouts of one item in a row.
 */
const numericForm = remembered(computeNumericForm);

function computeNumericForm(form: string): Stated | null {
  const tokens = tokenize(prepare(form)).filter((t) => t.key !== '~');
  const n = tokens.length > 0 ? numberAt(tokens, 0) : null;
  if (!n || n.end !== tokens.length) return null;
  // integerExactly: a year or a count is right or wrong, never near (1978 is not 1992); a measure
  // ("37 °C", "12.5 kDa") keeps the tolerance.
  const integer = tokens[0]!.kind === 'word' || /^[-+]?\d+$/.test(tokens[0]!.key);
  const counts = tokens
    .slice(1)
    .every((t) => t.kind === 'word' && (RULES.countWords.has(t.text) || RULES.countWords.has(t.key)));
  return { ...n.number!, key: n.value, exact: integer && counts };
}

/**
 * footnoteResidue: "19532" where the reference is the year 1953 is the year with its footnote
 * mark run in ("1953" and a superscript 2 copied as plain text); five or six digits are no year.
 */
function footnoteResidue(n: Mention, years: readonly Stated[]): Mention {
  const year = years.find((y) => /^\d{5,6}$/.test(n.value) && n.value.startsWith(y.key));
  return year ? { ...n, value: year.key, number: { value: year.value, percent: false } } : n;
}

/** Within a relative tolerance (absolute below 1e-9); 1e-9 relative stands for exactly equal. */
function numbersMatch(a: number, b: number, tolerance: number): boolean {
  const scale = Math.max(Math.abs(a), Math.abs(b));
  return scale < 1e-9 ? true : Math.abs(a - b) <= Math.max(tolerance, 1e-9) * scale;
}

/** Percent and fraction are the same number: 25% = 0.25 (and 25% = 25). */
function sameNumber(
  a: { value: number; percent: boolean },
  b: { value: number; percent: boolean },
  tolerance: number,
): boolean {
  const as = a.percent ? [a.value, a.value / 100] : [a.value];
  const bs = b.percent ? [b.value, b.value / 100] : [b.value];
  return as.some((x) => bs.some((y) => numbersMatch(x, y, tolerance)));
}

const YEAR = /^(?:1[0-9]{3}|20[0-9]{2})$/;

/** A year as a sentence writes one: four digits and no unit ("in 1830"). */
const isYear = (n: Mention) => n.end - n.start === 1 && YEAR.test(n.value);

/** dayOfDate: a number of 1 to 31 beside a month ("15 September 1830", "July 4") is a date's day. */
function dayOfDate(tokens: Token[], n: Mention): boolean {
  if (n.end - n.start !== 1 || !/^\d{1,2}$/.test(n.value) || Number(n.value) > 31) return false;
  const month = (t: Token | undefined) => t !== undefined && t.kind === 'word' && RULES.months.has(t.key);
  return (
    month(tokens[n.start - 1]) ||
    month(tokens[n.end]) ||
    (tokens[n.end]?.key === 'of' && month(tokens[n.end + 1]))
  );
}

/** "one" before a word that is no unit is a determiner ("one of the largest", "one side"), no count. */
const determiner = (tokens: Token[], n: Mention) =>
  n.end - n.start === 1 && tokens[n.start]!.key === 'one' && tokens[n.end]?.kind === 'word';

function numericGrader(truth: string, accepted: readonly string[]): Grader {
  const numbers = accepted.map(numericForm).filter((n) => n !== null);
  const years = numbers.filter((n) => n.exact && YEAR.test(n.key));
  return {
    text: false,
    wholeAnswer: true,
    forms: [],
    // sameKind: a year beside a count that is no year ("56 years, from 1216 to 1272"), the day of a
    // date ("15 September 1830") and "one" as a determiner compete with nothing.
    mentions(tokens) {
      const out: Mention[] = [];
      for (let i = 0; i < tokens.length; ) {
        const n = numberAt(tokens, i);
        if (n) {
          const m = footnoteResidue(n, years);
          if (!dayOfDate(tokens, m) && !determiner(tokens, m) && (years.length > 0 || !isYear(m)))
            out.push(m);
        }
        i = n ? n.end : i + 1;
      }
      return out;
    },
    decide(found, where) {
      const bounded = found.find((m) => m.bound !== null);
      if (bounded)
        return { score: 0, reason: `${bounded.bound} ${bounded.value} is a bound, not a value (${where})` };
      // Two values are two answers even when both lie within the tolerance ("99 or 100").
      const first = found[0]!;
      if (found.some((m) => !sameNumber(m.number!, first.number!, 0)))
        return {
          score: 0,
          reason: `several values (${found.map((m) => m.value).join(', ')}) in the ${where}`,
        };
      return numbers.some((n) => sameNumber(first.number!, n, n.exact ? 0 : NUMERIC_TOLERANCE))
        ? { score: 1, reason: `${first.value} matches in the ${where}` }
        : { score: 0, reason: `${first.value} is not ${truth} (${where})` };
    },
  };
}

/**
 * nameRunsOn: where a name that runs on into a longer one ends ("the Colorado River" for Colorado,
 * "the Notch Delta pathway" for Notch Delta) when a disjunction follows it, or a list separator and
 * another name on the same last word (parallel: a list, whatever an apposition after a comma
 * would be): the capitalised words after it (and a head of the rules' table) are part of it, so
 * "the Colorado River or the Hudson River" and "the Colorado River, the Hudson River" are a hedge
 * and a list, not the answer followed by more of its name. Otherwise the longer name ends where
 * the answer does, as before: "Denali National Park and Preserve" and "New York City, US" are one
 * place, as people read them.
 */
function nameRunsOn(tokens: Token[], i: number): { end: number; parallel: boolean } {
  const capitalised = (t: Token | undefined) =>
    t !== undefined && t.kind === 'word' && /^[A-Z][a-z]/.test(t.text);
  const alone = { end: i + 1, parallel: false };
  let end = i + 1;
  while (capitalised(tokens[end])) end++;
  if (tokens[end]?.kind === 'word' && RULES.heads.has(tokens[end]!.key)) end++;
  if (end === i + 1) return alone;
  const next = tokens[end];
  if (next !== undefined && (next.key === '/' || RULES.disjunctions.has(next.key)))
    return { end, parallel: false };
  // Another name on the same last word after a list separator ("the Colorado River, the Hudson River").
  if (!isListSeparator(next)) return alone;
  let j = end + 1;
  while (j < tokens.length && (isListSeparator(tokens[j]) || ARTICLES.has(tokens[j]!.key))) j++;
  // "Charles de Gaulle Airport, also known as Roissy Airport" describes it (an apposition, or an
  // adverb or a participle that opens one: "colloquially known as", "named after").
  const first = tokens[j];
  if (first === undefined || RULES.appositions.has(first.text) || /^[a-z]{3,}(?:ly|ed)$/.test(first.text))
    return alone;
  let k = j;
  while (k < tokens.length && tokens[k]!.kind !== 'punct' && !isListSeparator(tokens[k])) k++;
  return k > j + 1 && tokens[k - 1]!.key === tokens[end - 1]!.key ? { end, parallel: true } : alone;
}

/** A word's key without a plural ending: "bees" and "bee" are one head. */
const stem = (key: string) => (key.endsWith('s') ? key.slice(0, -1) : key);

/**
 * headGiven: the answer as the modifier of a compound whose head the sentence has already named
 * ("The largest bee in a hive is the queen bee.", "heat energy ... is geothermal energy"): the
 * head is what the sentence is about, the modifier is what it answers. The compound is one
 * candidate (its head goes with it), so a list or a hedge beside it still refuses ("the queen bee
 * or the worker bee"). A head the sentence has not named ("a kinase inhibitor") ends nothing.
 */
function headGiven(tokens: Token[], i: number): boolean {
  const head = tokens[i + 1]!;
  if (!/^[a-z]{3,}$/.test(head.text)) return false;
  const after = tokens[i + 2];
  if (after?.kind === 'word' || after?.kind === 'form') return false;
  const want = stem(head.key);
  return tokens.slice(0, i).some((t) => t.kind === 'word' && stem(t.key) === want);
}

/** A verb after a subject: one of subjectVerbs, or any word ending in -ed. */
export const isVerb = (t: Token): boolean =>
  t.kind === 'word' && ((t.key.length > 4 && t.key.endsWith('ed')) || RULES.subjectVerbs.has(t.key));

/**
 * A year as written: four digits alone ("1917"; not "1,917", "1990s", "19172" or "COVID-2019").
 */
const yearAt = (tokens: Token[], i: number) => {
  const t = tokens[i]!;
  const next = tokens[i + 1];
  return (
    t.kind === 'num' &&
    !t.attached &&
    YEAR.test(t.text) &&
    (next === undefined || next.space || next.kind === 'punct')
  );
};

/**
 * anotherYear: a reference that states one number, a year ("March 1930", "the 1917 revolution"),
 * is contradicted by a place that names none of its forms and states years, none of them its own
 * ("It opened in 1931."): an answer of the same kind, decided, not left to a verifier. A range or
 * a second number in the reference ("1135-1154", "1951-52") leaves other years possible.
 */
function anotherYear(accepted: readonly string[]): ((sentences: Token[][]) => string | null) | undefined {
  const numbers = accepted.flatMap((f) => {
    const tokens = tokenize(prepare(f));
    return tokens.flatMap((t, i) => (t.kind !== 'num' ? [] : yearAt(tokens, i) ? [t.text] : ['']));
  });
  const years = new Set(numbers);
  if (years.size !== 1 || years.has('')) return undefined;
  return (sentences) => {
    const stated = sentences.flatMap((s) => s.flatMap((t, i) => (yearAt(s, i) ? [t.text] : [])));
    return stated.length > 0 && !stated.some((y) => years.has(y)) ? stated[0]! : null;
  };
}

/** What a year form inside a date stands for (dateOfYear in freeFormGrader). */
const ANOTHER_DATE = 'another date';
const SAME_MONTH = 'same month';

export function freeFormGrader(truth: string, aliases: readonly string[]): Grader {
  const accepted = acceptedForms(truth, aliases);
  // A number is read as one only when every accepted form is a number: a reference written as one
  // with aliases in words ("234U", "Uranium") is a name.
  if (numericForm(truth) !== null && accepted.every((f) => numericForm(f) !== null))
    return numericGrader(truth, accepted);
  const forms = [...accepted, ...binomialForms(accepted), ...shorterNames(accepted)].map((text) => ({
    text,
    stands: ANSWER,
  }));
  const regionAnswer = accepted.some(regionForm);
  // A number with names in words ("43", "forty-three"), whichever one the reference names first:
  // a word after it is what it counts ("303 AD" for "three hundred and three / 303").
  const counts = accepted.some((f) => numericForm(f) !== null);
  // The months the reference itself (not an alias: "2013 / 27 November 2013" asks for the year) dates it to.
  const months = new Set(tokenize(prepare(truth)).flatMap((t) => (RULES.months.has(t.key) ? [t.key] : [])));
  return {
    text: true,
    wholeAnswer: true,
    forms,
    written: (text) => writtenForms(text, accepted).map((f) => ({ text: f, stands: ANSWER })),
    another: anotherYear(accepted),
    mentions(tokens) {
      const out: Mention[] = [];
      tokens.forEach((t, i) => {
        if (t.kind !== 'form') return;
        // dateOfYear: a form that is a year, inside a date ("8 November 2013" for 27 November 2013 /
        // 2013: dates read day first), is that date's year: where the reference dates it to a month,
        // another month is another date, and its month without the reference's day is undecided.
        const month = tokens[i - 1];
        if (months.size > 0 && month?.kind === 'word' && RULES.months.has(month.key)) {
          const value = months.has(month.key) ? SAME_MONTH : ANOTHER_DATE;
          out.push({ value, number: null, bound: null, start: i - 1, end: i + 1, listed: null });
          return;
        }
        // endsItsPhrase: "kinase" is not the answer in "a kinase inhibitor": the answer ends its
        // phrase, unless a verb follows it (the subject of its sentence: "Barbara McClintock
        // discovered transposition"; or a clause about it: "a type of gin made in Scotland", "a
        // bear named Ben"), it is written as a proper name ("Seymour Hersh first told ...", "the
        // Colorado River"), or it is a number and the word is what it counts ("four players").
        const next = tokens[i + 1];
        let end = i + 1;
        // The rest of a longer name (nameRunsOn), the word a number counts, a head of the rules'
        // table ("the mTOR pathway") or the head the sentence named (headGiven) goes with it: the
        // two are one candidate, so "37 points or 38 points", "the mTOR pathway or the MAPK
        // pathway" and "the Colorado River or the Hudson River" are hedges as "37 or 38" is, and
        // "the mTOR pathway is not involved" denies it.
        let parallel = false;
        if (t.name) ({ end, parallel } = nameRunsOn(tokens, i));
        else if (next?.kind === 'word' && RULES.heads.has(next.key)) end = i + 2;
        else if (
          next?.kind === 'word' &&
          !RULES.continuations.has(next.key) &&
          !RULES.fillers.has(next.key) &&
          !next.key.endsWith('ly') &&
          !isVerb(next)
        ) {
          if (!counts && !headGiven(tokens, i)) return;
          end = i + 2;
        }
        out.push({
          value: ANSWER,
          number: null,
          bound: null,
          start: i,
          end,
          listed: parallel || listedBeside(tokens, i, end, regionAnswer) ? hedgeOrList(tokens) : null,
        });
      });
      return out;
    },
    decide(found, where) {
      if (found.some((m) => m.value === ANOTHER_DATE))
        return { score: 0, reason: `another date in the ${where}` };
      if (found.some((m) => m.value === SAME_MONTH))
        return { score: 0, reason: `a date in the reference's month in the ${where}`, undecided: true };
      if (found.some((m) => m.listed === 'hedge'))
        return { score: 0, reason: `the answer is one of a hedge in the ${where}` };
      if (found.some((m) => m.listed === 'list'))
        return { score: 0, reason: `the answer is one of a list in the ${where}`, undecided: true };
      return { score: 1, reason: `matches in the ${where}` };
    },
  };
}
