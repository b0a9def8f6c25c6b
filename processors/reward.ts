import type { RewardRequestItem, RewardResult } from '../schemas/feeder.js';

// The verifiable reward. The same rules live in clients/python/bioalchemy_client/reward.py, and
// both pass the same table of cases (test/fixtures/reward-cases.json): change them together.
//
// Multiple choice: the model's answer is found in its final text (after any <think> block), in
// this order: the last \boxed{...}; the last "answer: ..." / "answer is ..." phrase; the last
// line when it is nothing but an option (a letter, "(C)", "C)", "C.", or an option's text); the
// last standalone option letter anywhere. Within the span found, two different letters are
// wrong; an option's text counts as its letter. Free-form: the same spans, normalised (case,
// accents, punctuation, articles, spaces) and compared with the ground truth and its aliases
// (a parenthetical "deoxyribonucleic acid (DNA)" gives both); numbers match within a tolerance.

type Input = Pick<RewardRequestItem, 'kind' | 'ground_truth' | 'output'> &
  Partial<Pick<RewardRequestItem, 'options' | 'aliases'>>;

const LETTERS = 'ABCDEFGHIJ';
/** Relative tolerance of a numeric free-form match (absolute below 1e-9). */
export const NUMERIC_TOLERANCE = 0.01;

export function score(input: Input): RewardResult {
  const text = finalText(input.output);
  if (!text.trim()) return { score: 0, reason: 'empty output' };
  return input.kind === 'mcq'
    ? scoreMcq(input.ground_truth, input.options ?? [], text)
    : scoreFreeForm(input.ground_truth, input.aliases ?? [], text);
}

/** The text after the last </think>; an unclosed <think> leaves nothing to grade. */
export function finalText(output: string): string {
  let text = output.replace(/\r\n/g, '\n');
  const close = text.toLowerCase().lastIndexOf('</think>');
  if (close >= 0) text = text.slice(close + '</think>'.length);
  else if (/<think>/i.test(text)) return '';
  return text;
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

const ANSWER_PHRASE =
  /(?:final\s+answer|correct\s+answer|correct\s+option|answer|option)\s*(?:is|:|=|-)\s*(?:option\s+)?([^\n]*)/gi;

/** The text after the last "answer: " / "the answer is" on its line. */
export function answerPhrase(text: string): string | null {
  let last: string | null = null;
  for (const m of text.matchAll(ANSWER_PHRASE)) if (m[1]!.trim()) last = m[1]!;
  return last;
}

export function normalise(s: string): string {
  return s
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/\\text\{([^}]*)\}/g, '$1')
    .replace(/[^\p{L}\p{N}.%\s-]/gu, ' ')
    .replace(/(^|\s)[.-]+(?!\d)|[.-]+(?=\s|$)/g, ' ')
    .replace(/\b(the|a|an)\b/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * Option letters named in a span: standalone capitals among the valid letters. "A" or "I" followed
 * by a lower-case word is an English word, not a letter.
 */
function lettersIn(span: string, valid: string): string[] {
  const out: string[] = [];
  const re = /(?<![A-Za-z0-9])([A-J])(?![A-Za-z0-9])/g;
  for (const m of span.matchAll(re)) {
    const letter = m[1]!;
    if (!valid.includes(letter)) continue;
    const after = span.slice(m.index + 1);
    if ((letter === 'A' || letter === 'I') && /^ +[a-z]/.test(after)) continue;
    out.push(letter);
  }
  return out;
}

/** The option a span names: its letters, else an option's text; 'two' when it names two. */
function optionIn(span: string, options: readonly string[], valid: string): string | 'two' | null {
  const letters = [...new Set(lettersIn(span, valid))];
  if (letters.length > 1) return 'two';
  if (letters.length === 1) return letters[0]!;
  const norm = normalise(span);
  if (!norm) return null;
  const named = options.flatMap((o, i) => {
    const n = normalise(o);
    return n && (norm === n || (n.length >= 4 && norm.includes(n))) ? [LETTERS[i]!] : [];
  });
  if (named.length === 1) return named[0]!;
  // One option's text containing another's ("cell wall" in "plant cell wall"): the exact one.
  const exact = options.flatMap((o, i) => (normalise(o) === norm ? [LETTERS[i]!] : []));
  if (exact.length === 1) return exact[0]!;
  return named.length > 1 ? 'two' : null;
}

function scoreMcq(truth: string, options: readonly string[], text: string): RewardResult {
  const want = truth.trim().toUpperCase();
  const valid = options.length >= 2 ? LETTERS.slice(0, options.length) : LETTERS;
  const judge = (got: string | 'two' | null, where: string): RewardResult | null => {
    if (got === null) return null;
    if (got === 'two') return { score: 0, reason: `two different options in the ${where}` };
    return got === want
      ? { score: 1, reason: `${got} in the ${where}` }
      : { score: 0, reason: `${got} in the ${where}, expected ${want}` };
  };
  const box = boxed(text).at(-1);
  if (box !== undefined) return judge(optionIn(box, options, valid), 'boxed answer') ?? noAnswer('boxed');
  const phrase = answerPhrase(text);
  if (phrase !== null) {
    const r = judge(optionIn(phrase, options, valid), 'answer phrase');
    if (r) return r;
  }
  const lastLine = text.trim().split('\n').at(-1)!.trim();
  const lineOption = /^\(?\**([A-J])\**\)?[.):]?\s*$/.exec(lastLine)?.[1];
  if (lineOption)
    return judge(valid.includes(lineOption) ? lineOption : null, 'last line') ?? noAnswer('line');
  const lineText = judge(
    options.findIndex((o) => normalise(o) === normalise(lastLine)) >= 0
      ? LETTERS[options.findIndex((o) => normalise(o) === normalise(lastLine))]!
      : null,
    'last line (option text)',
  );
  if (lineText) return lineText;
  if (new Set(lettersIn(lastLine, valid)).size > 1) return judge('two', 'last line')!;
  const letters = lettersIn(text, valid);
  return judge(letters.at(-1) ?? null, 'last standalone letter') ?? noAnswer('text');
}

const noAnswer = (where: string): RewardResult => ({ score: 0, reason: `no option found (${where})` });

/** The ground truth's accepted forms: itself, its aliases, and both sides of "long form (SHORT)". */
export function acceptedForms(truth: string, aliases: readonly string[]): string[] {
  const forms = [truth, ...aliases];
  for (const f of [truth, ...aliases]) {
    const m = /^(.+?)\s*\(([^()]+)\)\s*$/.exec(f);
    if (m) forms.push(m[1]!, m[2]!);
  }
  return [...new Set(forms.map(normalise).filter(Boolean))];
}

/** The number a short answer states ("1,000", "2.5e-3", "37 °C", "-4"), or null. */
export function numberIn(s: string): number | null {
  const m = /^\s*[~≈]?\s*([-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+−]?\.\d+)/.exec(s);
  if (!m) return null;
  const n = Number(m[1]!.replace(/,/g, '').replace('−', '-'));
  return Number.isFinite(n) ? n : null;
}

function numbersMatch(a: number, b: number): boolean {
  const scale = Math.max(Math.abs(a), Math.abs(b));
  return scale < 1e-9 ? true : Math.abs(a - b) <= NUMERIC_TOLERANCE * scale;
}

function scoreFreeForm(truth: string, aliases: readonly string[], text: string): RewardResult {
  const forms = acceptedForms(truth, aliases);
  const truthNumber = numberIn(truth);
  const box = boxed(text).at(-1);
  const phrase = answerPhrase(text);
  const lastLine = text.trim().split('\n').at(-1)!;
  const spans: [string, string][] =
    box !== undefined
      ? [[box, 'boxed answer']]
      : [
          ...(phrase !== null ? ([[phrase, 'answer phrase']] as [string, string][]) : []),
          [lastLine, 'last line'],
        ];
  for (const [span, where] of spans) {
    const norm = normalise(span).replace(/\.$/, '');
    if (forms.includes(norm)) return { score: 1, reason: `matches in the ${where}` };
    if (truthNumber !== null) {
      const got = numberIn(span.replace(/^[\s$*]+/, ''));
      if (got !== null)
        return numbersMatch(got, truthNumber)
          ? { score: 1, reason: `${got} within tolerance in the ${where}` }
          : { score: 0, reason: `${got} is not ${truthNumber} (${where})` };
    }
  }
  return { score: 0, reason: `no accepted form of the answer in the ${spans[0]![1]}` };
}
