import type { RewardRequestItem, RewardResult } from '../schemas/feeder.js';

// The verifiable reward. The same rules live in clients/python/bioalchemy_client/reward.py, and
// both pass the same two tables (test/fixtures/reward-cases.json, formats right and wrong, and
// test/fixtures/reward-adversarial.json, outputs built to game the reward, all 0): change them
// together, token for token.
//
// As Math-Verify does, the answer is extracted by priority and then compared for equivalence.
// The places, in order, after any <think> block: every \boxed{...}; else every "answer: ..." /
// "the answer is ..." phrase (its first sentence); else the last sentence that is not a
// question, together with every sentence of the output that is nothing but candidate answers
// ("C", "3 copies", "A is possible."). The first place that names anything decides:
// - a candidate is an option letter or an option's text (MCQ), a number with its units
//   (a numeric answer), or an accepted form of the answer (free-form text);
// - a candidate in a clause with a negation ("not C", "does not increase", "C is wrong") is not
//   an answer; a place with only negated candidates scores 0;
// - more than one different candidate ("A and C", two boxes, "3 or 4", a list, a hedge)
//   scores 0: GRPO would otherwise learn to name several; so does a free-form box beside
//   another box that holds something else;
// - a free-form answer ends its phrase: "kinase" is not the answer in "a kinase inhibitor",
//   but is in "the kinase pathway" (a generic noun) and "kinases" (an ending);
// - text is compared on a key without case, accents, spaces, hyphens, and with Greek letters
//   spelled out (α = alpha), so "CRISPR Cas9" = "CRISPR-Cas9" and "TNFα" = "TNF-alpha";
//   numbers within a relative tolerance, a percent equal to its fraction (25% = 0.25), number
//   words up to twenty.

type Input = Pick<RewardRequestItem, 'kind' | 'ground_truth' | 'output'> &
  Partial<Pick<RewardRequestItem, 'options' | 'aliases'>>;

const LETTERS = 'ABCDEFGHIJ';
/** Relative tolerance of a numeric free-form match (absolute below 1e-9). */
const NUMERIC_TOLERANCE = 0.01;

export function score(input: Input): RewardResult {
  const text = prepare(finalText(input.output));
  if (!/[A-Za-z0-9]/.test(text)) return { score: 0, reason: 'empty output' };
  const grader =
    input.kind === 'mcq'
      ? mcqGrader(input.ground_truth, input.options ?? [])
      : freeFormGrader(input.ground_truth, input.aliases ?? []);
  for (const place of placesOf(text, grader)) {
    if (place.unknown) return { score: 0, reason: `a box without the answer among the ${place.where}` };
    const verdict = judge(grader, place.sentences, place.where);
    if (verdict) return verdict;
    if (place.decisive) return { score: 0, reason: `no candidate answer in the ${place.where}` };
  }
  return { score: 0, reason: 'no candidate answer in the final sentence' };
}

/** The text after the last </think>; an unclosed <think> leaves nothing to grade. */
function finalText(output: string): string {
  const text = output.replace(/\r\n?/g, '\n');
  const close = [...text.matchAll(/<\/think>/gi)].at(-1);
  if (close) return text.slice(close.index + close[0].length);
  return /<think>/i.test(text) ? '' : text;
}

const GREEK: Record<string, string> = {
  α: 'alpha',
  β: 'beta',
  γ: 'gamma',
  δ: 'delta',
  ε: 'epsilon',
  ζ: 'zeta',
  η: 'eta',
  θ: 'theta',
  ι: 'iota',
  κ: 'kappa',
  λ: 'lambda',
  μ: 'mu',
  ν: 'nu',
  ξ: 'xi',
  ο: 'omicron',
  π: 'pi',
  ρ: 'rho',
  σ: 'sigma',
  ς: 'sigma',
  τ: 'tau',
  υ: 'upsilon',
  φ: 'phi',
  χ: 'chi',
  ψ: 'psi',
  ω: 'omega',
};

/**
 * Unicode and LaTeX folded to what the tokenizer reads: accents dropped, Greek letters spelled
 * out, typographic quotes, dashes and spaces made ASCII, \text{} unwrapped, markdown emphasis gone.
 */
function prepare(text: string): string {
  // Superscript exponents ("10⁻³") would fold to plain digits ("10-3"): mark them first.
  let s = text.replace(
    /[\u2070\u00b9\u00b2\u00b3\u2074-\u2079\u207a\u207b]+/g,
    (m) => `^${m.normalize('NFKD')}`,
  );
  s = s.normalize('NFKD').replace(/[\u0300-\u036f]/g, '');
  s = s.replace(/[\u00a0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff]/g, ' ');
  s = s.replace(/[\u2018\u2019\u02bc]/g, "'").replace(/[\u2212\u2010-\u2015]/g, '-');
  s = s.replace(/[\u0391-\u03a9\u03b1-\u03c9]/g, (ch) => GREEK[ch.toLowerCase()] ?? ch);
  s = s.replace(/\\(?:text|mathrm|textbf|mathbf|mbox)\s*\{([^{}]*)\}/g, '$1');
  s = s
    .replace(/\\%/g, '%')
    .replace(/\\(?:times|cdot)/g, '×')
    .replace(/\\[,;:! ]/g, ' ');
  s = s.replace(/[*#`]/g, ' ');
  return s.replace(/n't\b/gi, ' not');
}

/** Contents of every \boxed{...} (nested braces allowed), in order. */
function boxed(text: string): string[] {
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

const ANSWER_PHRASE =
  /\b(?:final\s+answer|correct\s+answer|correct\s+option|correct\s+choice|answer|option|choice)\s*(?:is|would\s+be|will\s+be|should\s+be|:|=|-)\s*([^\n]*)/gi;

// ---------------------------------------------------------------------------------------------
// Tokens

interface Token {
  readonly kind: 'word' | 'num' | 'punct';
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
}

const NUMBER_WORDS = [
  'zero',
  'one',
  'two',
  'three',
  'four',
  'five',
  'six',
  'seven',
  'eight',
  'nine',
  'ten',
  'eleven',
  'twelve',
  'thirteen',
  'fourteen',
  'fifteen',
  'sixteen',
  'seventeen',
  'eighteen',
  'nineteen',
  'twenty',
];
/** Units written right after a number ("12.5kDa", "37C"); case matters ("5S rRNA" is a name). */
const UNITS = new Set(
  (
    'kDa Da kD bp kb kbp Mb nt aa g mg ug ng pg kg L l mL ml uL ul nL M mM uM nM pM fM mol mmol ' +
    'nmol s ms min h hr hrs d x X mV Hz kHz C K cm mm um nm Gy U IU'
  ).split(' '),
);
/** Words that may follow a number as its unit ("3 copies", "25 per cent", "12.5 kilodaltons"). */
const UNIT_WORDS = new Set(
  (
    'percent per cent fold times degree degrees celsius copy copies cell cells kilodaltons kilodalton ' +
    'daltons dalton base bases pairs pair nucleotides amino acids residues hours hour minutes minute ' +
    'seconds second days day weeks week months month years year molar micromolar millimolar nanomolar ' +
    'grams gram milligrams micrograms liters litres milliliters chromosomes chromosome genes gene mu'
  ).split(' '),
);
/** Punctuation kept as tokens; any other symbol only separates words. */
const SIGNIFICANT = new Set([...",;:.!?/-()%&+=<>~±'"]);
const NUMBER = /(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|\.\d+/y;
const SCIENTIFIC = /\s*[x×]\s*10\s*\^\s*\{?\s*([-+]?\d+)\s*\}?/y;
const POWER_OF_TEN = /\s*\^\s*\{?\s*([-+]?\d+)\s*\}?/y;
const FRACTION = /\/(\d+)(?!\d|[.,]\d)/y;
const LETTERS_RUN = /[A-Za-z]+/y;
const WORD = /[A-Za-z0-9]+/y;
const SIGN_AFTER = new Set([...'([{=:~<>≈']);

const isSpace = (ch: string) => ch === ' ' || ch === '\t' || ch === '\n' || ch === '\f' || ch === '\v';
const isDigit = (ch: string | undefined) => ch !== undefined && ch >= '0' && ch <= '9';
const isAlnum = (ch: string | undefined) =>
  ch !== undefined && ((ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z'));

/** One line of prepared text as tokens. */
function tokenize(line: string): Token[] {
  const out: Token[] = [];
  let space = true;
  let i = 0;
  const push = (kind: Token['kind'], text: string, key: string, value: number | null, attached: boolean) => {
    out.push({ kind, text, key, space, value, attached });
    space = false;
  };
  while (i < line.length) {
    const ch = line[i]!;
    if (isSpace(ch)) {
      space = true;
      i++;
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
      if (glued === undefined || (UNITS.has(glued) && !isAlnum(line[end + glued.length]))) {
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
      const n = NUMBER_WORDS.indexOf(key);
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

const isWord = (t: Token | undefined) => t !== undefined && t.kind !== 'punct';

/**
 * A line's sentences. A full stop after a lone letter or a number ends no sentence ("C. Golgi",
 * "A. B. C.", "3. 4."), so a list of candidates stays one sentence.
 */
function sentencesOf(text: string): Token[][] {
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

const isQuestion = (sentence: Token[]) => sentence.at(-1)?.key === '?';

// ---------------------------------------------------------------------------------------------
// Candidates

interface Mention {
  /** The option letter, or 'answer' for an accepted form of a free-form answer, or a number's key. */
  readonly value: string;
  readonly number: { value: number; percent: boolean } | null;
  readonly start: number;
  readonly end: number;
  /** Beside another short item in a list ("increase or decrease"): a hedge. */
  readonly listed: boolean;
}

interface Grader {
  /** Free-form text: a box that names nothing known is another answer, not an empty one. */
  readonly text: boolean;
  mentions(sentence: Token[]): Mention[];
  decide(found: Mention[], where: string): RewardResult;
}

/** Negations: a candidate in a clause with one of them is not an answer. */
const NEGATORS = new Set(
  'not no never neither nor none cannot without incorrect wrong false unlikely rather instead unlike except excluded eliminated'.split(
    ' ',
  ),
);
/** Words that start a new clause (besides , ; :). */
const CLAUSE_WORDS = new Set(
  'but whereas however although though while yet rather instead unlike except'.split(' '),
);
/** Words that carry no candidate of their own in an answer sentence. */
const FILLER = new Set(
  (
    'it is are was were be been will would should could might may can must the a an this that these those ' +
    'there so thus therefore hence then overall answer final correct right best option options choice ' +
    'choices i think guess believe maybe perhaps possibly probably likely plausible both either also my ' +
    'its yes of all only here we say pick go with choose approximately about around roughly nearly ' +
    'exactly value result'
  ).split(' '),
);
/** A word after a letter that keeps it a letter ("A and C", "C is"); else "A protein", "B cells". */
const LETTER_LINKS = new Set(
  (
    'and or nor vs versus is are was were would could should will might may must can seems appears ' +
    'because since as but best fits matches describes correctly only also both then so therefore thus rather ' +
    'not instead than over unlike which that here for'
  ).split(' '),
);
/** A word before a capital that makes it a name: "vitamin C", "hepatitis B", "type A". */
const LETTER_PREFIXES = new Set(
  'vitamin hepatitis type class group chain complex site domain protein photosystem helix influenza strand form region'.split(
    ' ',
  ),
);
/** Words that may follow a free-form answer in its clause ("increase in", "increase with"). */
const CONTINUATIONS = new Set(
  (
    'as because since which that due when after before in with by given suggesting indicating ' +
    'consistent compared relative from at for under on to during following upon via through than ' +
    'and or nor is are was were will would'
  ).split(' '),
);
/** Generic nouns after a name that keep it the same answer: "the CRISPR/Cas9 system", "p53 protein". */
const HEADS = new Set(
  'system pathway signaling signalling gene protein technique method approach process mechanism'.split(' '),
);
const SCALES = new Map([
  ['thousand', 1e3],
  ['million', 1e6],
  ['billion', 1e9],
]);
const LIST_WORDS = new Set(['or', 'and', 'nor', 'vs', 'versus']);
const LIST_PUNCT = new Set([',', ';', '/', '&']);
/** Punctuation that may join the parts of one name: "CRISPR-Cas9", "mg/mL", "5'-UTR". */
const JOINERS = new Set(['-', '/', "'", '+']);

const isListSeparator = (t: Token | undefined) =>
  t !== undefined && (t.kind === 'punct' ? LIST_PUNCT.has(t.key) : LIST_WORDS.has(t.key));

/** Keys of a form: its words and numbers joined, leading articles dropped ("the Golgi" = "golgi"). */
function formKey(form: string): string {
  const words = tokenize(prepare(form)).filter(isWord);
  while (words.length > 1 && ['the', 'a', 'an'].includes(words[0]!.key)) words.shift();
  return words.map((t) => t.key).join('');
}

/** The longest run of tokens from i whose joined key is a form (plural or past endings allowed). */
function formAt(
  tokens: Token[],
  i: number,
  forms: ReadonlyMap<string, string>,
  longest: number,
): { end: number; value: string } | null {
  let best: { end: number; value: string } | null = null;
  let joined = '';
  // A key longer than the longest form plus an ending matches nothing.
  for (let j = i; j < tokens.length && joined.length <= longest; j++) {
    const t = tokens[j]!;
    if (t.kind === 'punct') {
      if (j > i && JOINERS.has(t.key) && !t.space) continue;
      break;
    }
    if (j > i && tokens[j - 1]!.kind === 'punct' && t.space) break;
    joined += t.key;
    const value =
      forms.get(joined) ??
      ['s', 'es', 'd', 'ed']
        .map((end) => (joined.endsWith(end) ? forms.get(joined.slice(0, -end.length)) : undefined))
        .find((v) => v !== undefined);
    if (value !== undefined) best = { end: j + 1, value };
  }
  return best;
}

/** A form glued by a hyphen to a word before or after it is part of another name ("anti-TNF"). */
function hyphenated(tokens: Token[], start: number, end: number): boolean {
  const before = tokens[start - 1];
  const after = tokens[end];
  return (
    (before?.key === '-' && !before.space && !tokens[start]!.space && isWord(tokens[start - 2])) ||
    (after?.key === '-' && !after.space && isWord(tokens[end + 1]) && !tokens[end + 1]!.space)
  );
}

/** Another short item in a list right beside [start, end): "decrease" in "increase or decrease". */
function listedBeside(tokens: Token[], start: number, end: number): boolean {
  const competes = (item: Token[]) => {
    const words = item.filter(isWord);
    if (words.length === 0 || words.length > 4) return false;
    if (CONTINUATIONS.has(words[0]!.key) || words.some((w) => NEGATORS.has(w.key))) return false;
    return words.some((w) => !FILLER.has(w.key));
  };
  const stops = (t: Token) => isListSeparator(t) || (t.kind === 'punct' && ',;:.!?('.includes(t.key));
  if (isListSeparator(tokens[end])) {
    const item: Token[] = [];
    for (let j = end + 1; j < tokens.length && !stops(tokens[j]!); j++) item.push(tokens[j]!);
    if (competes(item)) return true;
  }
  if (isListSeparator(tokens[start - 1])) {
    const item: Token[] = [];
    for (let j = start - 2; j >= 0 && !stops(tokens[j]!); j--) item.unshift(tokens[j]!);
    if (competes(item)) return true;
  }
  return false;
}

/** The number at i with its units ("12.5 kDa", "25 %", "3-fold", "three copies"), or null. */
function numberAt(tokens: Token[], i: number): Mention | null {
  const t = tokens[i]!;
  if (t.value === null || (t.kind === 'num' && t.attached)) return null;
  let end = i + 1;
  let percent = false;
  let value = t.value;
  let key = t.key;
  const scale = tokens[end]?.kind === 'word' ? SCALES.get(tokens[end]!.key) : undefined;
  if (scale !== undefined) {
    value *= scale;
    key += ` ${tokens[end]!.key}`;
    end += 1;
  }
  for (let units = 0; units < 3 && end < tokens.length; units++) {
    const u = tokens[end]!;
    const unit = (w: Token | undefined) =>
      w !== undefined && w.kind === 'word' && (UNITS.has(w.text) || UNIT_WORDS.has(w.key));
    if (u.key === '±' && tokens[end + 1]?.kind === 'num') end += 2;
    else if (u.key === '%') end += 1;
    else if (unit(u)) end += 1;
    else if ((u.key === '/' || (u.key === '-' && !u.space)) && unit(tokens[end + 1])) end += 2;
    else break;
    const last = tokens[end - 1]!;
    if (last.key === '%' || last.key === 'percent' || last.key === 'cent') percent = true;
  }
  return { value: key, number: { value, percent }, start: i, end, listed: false };
}

function mcqGrader(truth: string, options: readonly string[]): Grader {
  const want = truth.trim().toUpperCase();
  const valid = options.length >= 2 ? LETTERS.slice(0, options.length) : LETTERS;
  // A one-letter option ("A", "C", "G", "T") is read as a letter, as the prompt asks for letters.
  const forms = new Map<string, string>();
  options.forEach((o, i) => {
    const key = formKey(o);
    if (!/^[a-z]$/.test(key) && !forms.has(key)) forms.set(key, LETTERS[i]!);
  });
  const longest = Math.max(0, ...[...forms.keys()].map((k) => k.length));
  const letterAt = (tokens: Token[], i: number, words: number): string | null => {
    const t = tokens[i]!;
    if (t.kind !== 'word' || t.text.length !== 1 || !valid.includes(t.text.toUpperCase())) return null;
    const prev = tokens[i - 1];
    const next = tokens[i + 1];
    if (t.text === t.text.toUpperCase()) {
      if (prev?.kind === 'word' && LETTER_PREFIXES.has(prev.key)) return null;
      if (next?.kind === 'word' && next.space && /^[a-z]/.test(next.text) && !LETTER_LINKS.has(next.key))
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
    mentions(tokens) {
      const out: Mention[] = [];
      const words = tokens.filter(isWord).length;
      for (let i = 0; i < tokens.length; ) {
        const form = isWord(tokens[i]) ? formAt(tokens, i, forms, longest) : null;
        if (form && !hyphenated(tokens, i, form.end)) {
          out.push({ value: form.value, number: null, start: i, end: form.end, listed: false });
          i = form.end;
          continue;
        }
        const letter = letterAt(tokens, i, words);
        if (letter) out.push({ value: letter, number: null, start: i, end: i + 1, listed: false });
        i++;
      }
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

/** The ground truth's accepted forms: itself, its aliases, and both sides of "long form (SHORT)". */
export function acceptedForms(truth: string, aliases: readonly string[]): string[] {
  const forms = [truth, ...aliases];
  for (const f of [truth, ...aliases]) {
    const m = /^(.+?)\s*\(([^()]+)\)\s*$/.exec(f);
    if (m) forms.push(m[1]!, m[2]!);
  }
  return [...new Set(forms.map((f) => f.trim()).filter((f) => formKey(f) !== ''))];
}

/** The number a form states, when it is nothing but a number and its units ("37 °C", "25%"). */
function numericForm(form: string): { value: number; percent: boolean } | null {
  const tokens = tokenize(prepare(form)).filter((t) => t.key !== '~');
  const n = tokens.length > 0 ? numberAt(tokens, 0) : null;
  return n && n.end === tokens.length ? n.number : null;
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

function freeFormGrader(truth: string, aliases: readonly string[]): Grader {
  const accepted = acceptedForms(truth, aliases);
  const numbers = accepted.map(numericForm).filter((n) => n !== null);
  if (numericForm(truth) !== null) {
    return {
      text: false,
      mentions(tokens) {
        const out: Mention[] = [];
        for (let i = 0; i < tokens.length; ) {
          const n = numberAt(tokens, i);
          if (n) out.push(n);
          i = n ? n.end : i + 1;
        }
        return out;
      },
      decide(found, where) {
        // Two values are two answers even when both lie within the tolerance ("99 or 100").
        const first = found[0]!;
        if (found.some((m) => !sameNumber(m.number!, first.number!, 0)))
          return {
            score: 0,
            reason: `several values (${found.map((m) => m.value).join(', ')}) in the ${where}`,
          };
        return numbers.some((n) => sameNumber(first.number!, n, NUMERIC_TOLERANCE))
          ? { score: 1, reason: `${first.value} matches in the ${where}` }
          : { score: 0, reason: `${first.value} is not ${truth} (${where})` };
      },
    };
  }
  const forms = new Map(accepted.map((f) => [formKey(f), 'answer']));
  const longest = Math.max(0, ...[...forms.keys()].map((k) => k.length));
  return {
    text: true,
    mentions(tokens) {
      const out: Mention[] = [];
      for (let i = 0; i < tokens.length; i++) {
        const form = isWord(tokens[i]) ? formAt(tokens, i, forms, longest) : null;
        if (!form || hyphenated(tokens, i, form.end)) continue;
        // "kinase" is not the answer in "a kinase inhibitor": the answer ends its phrase.
        const next = tokens[form.end];
        if (
          next?.kind === 'word' &&
          !CONTINUATIONS.has(next.key) &&
          !HEADS.has(next.key) &&
          !FILLER.has(next.key) &&
          !next.key.endsWith('ly')
        )
          continue;
        out.push({
          value: 'answer',
          number: null,
          start: i,
          end: form.end,
          listed: listedBeside(tokens, i, form.end),
        });
        i = form.end - 1;
      }
      return out;
    },
    decide(found, where) {
      return found.some((m) => m.listed)
        ? { score: 0, reason: `the answer is one of a list or a hedge in the ${where}` }
        : { score: 1, reason: `matches in the ${where}` };
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Places and the decision

/**
 * The candidates of a sentence, and how many a negation cancels: a negation reaches the
 * candidates after it in its clause ("not C", "does not increase"), and one before it when only
 * filler lies between ("C is not correct", "C is clearly wrong"), not "C and not B".
 */
function readSentence(grader: Grader, tokens: Token[]): { positive: Mention[]; negated: number } {
  const mentions = grader.mentions(tokens);
  const mentionAt = new Map<number, Mention>();
  for (const m of mentions) for (let k = m.start; k < m.end; k++) mentionAt.set(k, m);
  const clauseOf: number[] = [];
  let clause = 0;
  tokens.forEach((t, i) => {
    if (!mentionAt.has(i) && ((t.kind === 'punct' && ',;:'.includes(t.key)) || CLAUSE_WORDS.has(t.key)))
      clause++;
    clauseOf.push(clause);
  });
  const skippable = (t: Token) => t.kind === 'punct' || FILLER.has(t.key) || t.key.endsWith('ly');
  const negated = new Set<Mention>();
  tokens.forEach((t, k) => {
    if (mentionAt.has(k) || t.kind !== 'word' || !NEGATORS.has(t.key)) return;
    for (const m of mentions) {
      if (clauseOf[m.start] !== clauseOf[k]) continue;
      let between = m.end;
      while (between < k && skippable(tokens[between]!) && !mentionAt.has(between)) between++;
      if (m.start > k || between === k) negated.add(m);
    }
  });
  const positive = mentions.filter((m) => !negated.has(m));
  return { positive, negated: negated.size };
}

/** A sentence of nothing but candidates and filler ("C", "3 copies", "A is possible."). */
function candidatesOnly(grader: Grader, tokens: Token[]): boolean {
  const mentions = grader.mentions(tokens);
  if (mentions.length === 0) return false;
  return tokens.every(
    (t, i) => t.kind === 'punct' || FILLER.has(t.key) || mentions.some((m) => i >= m.start && i < m.end),
  );
}

function judge(grader: Grader, sentences: Token[][], where: string): RewardResult | null {
  const read = sentences.map((s) => readSentence(grader, s));
  const positive = read.flatMap((r) => r.positive);
  if (positive.length > 0) return grader.decide(positive, where);
  return read.some((r) => r.negated > 0)
    ? { score: 0, reason: `only negated candidates in the ${where}` }
    : null;
}

interface Place {
  readonly where: string;
  readonly sentences: Token[][];
  /** When it names nothing, nothing later is read (a box is the answer, even an empty one). */
  readonly decisive: boolean;
  /** A box with something other than the answer in it. */
  readonly unknown?: boolean;
}

function* placesOf(text: string, grader: Grader): Generator<Place> {
  const boxes = boxed(text);
  if (boxes.length > 0) {
    const each = boxes.map((b) => sentencesOf(b.replace(/\n/g, ' ')));
    if (
      grader.text &&
      each.length > 1 &&
      each.some((sentences) => !sentences.some((s) => grader.mentions(s).length > 0))
    )
      yield { where: 'boxed answers', sentences: [], decisive: true, unknown: true };
    else yield { where: 'boxed answer', sentences: each.flat(), decisive: true };
    return;
  }
  const phrases = [...text.matchAll(ANSWER_PHRASE)].flatMap((m) => sentencesOf(m[1]!).slice(0, 1));
  if (phrases.length > 0) yield { where: 'answer phrase', sentences: phrases, decisive: false };
  const sentences = sentencesOf(text).filter((s) => !isQuestion(s));
  const last = sentences.at(-1);
  if (last === undefined) return;
  const alsoNamed = sentences.slice(0, -1).filter((s) => candidatesOnly(grader, s));
  yield { where: 'final sentence', sentences: [...alsoNamed, last], decisive: true };
}
