import { RULES } from './rules.js';
import { isAlnum, isDigit, MARK_CLOSE, MARK_NAME, MARK_OPEN, prepare } from './text.js';

// The anchor: the reference's accepted forms are found in the whole prepared text first, each
// occurrence marked as one token standing for the answer (or an option's letter), and only then
// is the text cut into sentences and read. So "E. coli", "1,25-dihydroxyvitamin D3" and
// "Na+/K+-ATPase" are never cut on their full stops, commas or slashes.

/** A form to find, and what an occurrence stands for: an option's letter, or '@' for the answer. */
export interface Form {
  readonly text: string;
  readonly stands: string;
}

export const ANSWER = '@';

/** Characters a key keeps besides letters and digits: signs that change what a name is. */
const KEY_SIGNS = new Set([...'+<>=≤≥%']);
/** What may stand between two characters of a form however the reference wrote it. */
const FREE_GAP = /[ \t\-'"\u201c\u201d/^_~$()]/g;

/**
 * The text as a key (lower-case letters, digits, signs and charges; a full stop or comma between
 * digits as '.'), with each key character's index in the text.
 */
function keyed(text: string): { key: string; at: number[] } {
  let key = '';
  const at: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (isAlnum(ch)) key += ch.toLowerCase();
    else if (KEY_SIGNS.has(ch)) key += ch;
    // A minus that ends a name is a charge ("Cl-", "Ca2-", "CD4-"); one inside a name joins it.
    else if (ch === '-' && (isAlnum(text[i - 1]) || text[i - 1] === '^') && !isAlnum(text[i + 1])) key += ch;
    else if ((ch === '.' || ch === ',') && isDigit(text[i - 1]) && isDigit(text[i + 1])) key += '.';
    else continue;
    at.push(i);
  }
  return { key, at };
}

/** A gap with what any writer may put in one (spaces, hyphens, primes) taken out. */
const residue = (gap: string) => gap.replace(FREE_GAP, '');

/**
 * fn remembered for the last few thousand forms it was given: a trainer scores several rollouts
 * of one item in a row, so the forms of one reference repeat.
 */
export function remembered<T>(fn: (form: string) => T): (form: string) => T {
  const seen = new Map<string, T>();
  return (form) => {
    let value = seen.get(form);
    if (value === undefined) {
      if (seen.size >= 4096) seen.clear();
      value = fn(form);
      seen.set(form, value);
    }
    return value;
  };
}

/** A form without a leading article ("the Golgi" = "Golgi"), prepared as outputs are. */
const bare = remembered((form) => {
  const s = prepare(form)
    .trim()
    .replace(/[.!;:,]+$/, '');
  const without = s.replace(/^(?:the|a|an)\s+/i, '');
  return keyed(without).key === '' ? s : without;
});

/** A form's key, '' for a form with nothing to find. */
export const formKey = (form: string): string => keyed(bare(form)).key;

interface Pattern {
  readonly key: string;
  /** gaps[k]: the residue the reference has between key characters k and k + 1. */
  readonly gaps: readonly string[];
  /** The form as written (no ending or other number): only it takes loose punctuation. */
  readonly written: boolean;
}

/**
 * The keys one term is written under: itself, with an added ending (kinases, increased), and
 * for a last word of four or more letters that is no acronym, its other number
 * (mitochondria = mitochondrion, nuclei = nucleus, mice = mouse).
 */
const patternsOf = remembered((form): readonly Pattern[] => computePatterns(form));

function computePatterns(form: string): Pattern[] {
  const text = bare(form);
  const { key, at } = keyed(text);
  if (key === '') return [];
  const gaps = at.slice(1).map((i, k) => residue(text.slice(at[k]! + 1, i)));
  const keys = new Set([key]);
  const last = /([A-Za-z]+)$/.exec(text)?.[1];
  if (last !== undefined) {
    for (const ending of RULES.endings.added) keys.add(key + ending);
    const word = last.toLowerCase();
    if (word.length >= 4 && last !== last.toUpperCase()) {
      const swap = (from: string, to: string, whole: boolean) => {
        if (whole ? word === from : word.endsWith(from) && word.length - from.length >= 3)
          keys.add(key.slice(0, key.length - from.length) + to);
      };
      for (const [a, b] of RULES.endings.swaps) {
        swap(a, b, false);
        swap(b, a, false);
      }
      for (const [a, b] of RULES.endings.irregular) {
        swap(a, b, true);
        swap(b, a, true);
      }
    }
  }
  return [...keys].map((k, n) => ({ key: k, gaps, written: n === 0 }));
}

/**
 * The other way a binomial is written: "Escherichia coli K-12" abbreviated "E. coli K-12", and a
 * known abbreviation written out ("E. coli" = "Escherichia coli", from the rules' table).
 */
export function binomialForms(forms: readonly string[]): string[] {
  return forms.flatMap((f) => {
    const full = /^([A-Z])[a-z]{2,}\s+([a-z]{3,}(?:\s.*)?)$/.exec(f.trim());
    if (full) return [`${full[1]}. ${full[2]}`];
    const short = /^([A-Z]\.)\s*([a-z]{3,})((?:\s.*)?)$/.exec(f.trim());
    const genus = short ? RULES.binomials.get(`${short[1]} ${short[2]}`) : undefined;
    return short && genus ? [`${genus}${short[3]}`] : [];
  });
}

/**
 * loosePunctuation: punctuation a writer puts inside a name the reference writes without it, as
 * the SQuAD normalisation people agree with drops it: a comma between two words of a title ("Kiss
 * Me, Kate" for Kiss Me Kate) and a full stop between single letters ("D.I.V.O.R.C.E.", "U.S.A.").
 * Quotes anywhere inside are free (FREE_GAP: 'James "Buster" Douglas'). Only the form as written
 * takes it, not its plural: "E. coli, S. aureus" is a list, not "E. colis".
 */
function loosePunctuation(text: string, from: number, to: number, raw: string): boolean {
  // Words on both sides: "A, C, E" is a list of letters, not the name ACE.
  if (/^, +$/.test(raw)) return isAlnum(text[from - 1]) && isAlnum(text[to + 1]);
  return raw === '.' && !isAlnum(text[from - 1]) && !isAlnum(text[to + 1]);
}

/** Where the key match [k, k + length) lies in the text, when it is a whole term there. */
function occurrence(text: string, at: readonly number[], k: number, p: Pattern): [number, number] | null {
  for (let j = k; j < k + p.key.length - 1; j++) {
    if (at[j + 1] === at[j]! + 1) continue;
    const raw = text.slice(at[j]! + 1, at[j + 1]!);
    const gap = residue(raw);
    if (
      gap !== '' &&
      gap !== (p.gaps[j - k] ?? '') &&
      !(p.written && loosePunctuation(text, at[j]!, at[j + 1]!, raw))
    )
      return null;
  }
  const start = at[k]!;
  const last = at[k + p.key.length - 1]!;
  // A term inside a longer word, or glued by a hyphen or a sign to more of a name ("anti-TNF",
  // "CD4+" for CD4, "E. coli-derived"), is another term.
  const before = text[start - 1];
  const after = text[last + 1];
  if ((isAlnum(before) && !camelGlued(text, start)) || (before === '-' && isAlnum(text[start - 2])))
    return null;
  const cited = citationAfter(text, start, last + 1);
  if (cited > 0) return [start, last + 1 + cited];
  if (isAlnum(after) || after === '+' || after === '-') return null;
  return [start, last + 1];
}

/**
 * gluedAfterWord: a capitalised form run into the lower-case word before it, as search-backed
 * assistants drop the spaces around their links ("was copied wasBuddhism.", "signed byCanada,"):
 * a case change inside a word opens a new one there. A form that opens in lower case, or after a
 * capital ("NASA" in "UNASA"), stays inside the word.
 */
const camelGlued = (text: string, start: number) =>
  /[a-z]/.test(text[start - 1] ?? '') &&
  /[A-Z]/.test(text[start] ?? '') &&
  /[a-z]/.test(text[start + 1] ?? '');

/**
 * citationDigits: a citation mark run into the word it annotates, as search-backed assistants
 * copy them ("was Otto Hahn1.", "is Ghent12, the ..."): one or two digits glued to a form that
 * ends in a word of four letters or more, right before a full stop, comma, semicolon or colon that
 * ends the clause (or the line). The mark goes with the form; a name that ends in its own digits
 * ("Notch1", "Sox2") is a form of its own and matches first, and a short one ("Cdk1" for Cdk) is
 * another name. Returns how many characters the mark takes (0: none).
 */
function citationAfter(text: string, start: number, end: number): number {
  CITATION.lastIndex = end;
  const m = CITATION.exec(text);
  if (!m || !/[A-Za-z]{4}$/.test(text.slice(Math.max(start, end - 4), end))) return 0;
  return m[1]!.length;
}
const CITATION = /([0-9]{1,2})(?:[.,;:](?![0-9A-Za-z])|$|(?=\n))/y;

/**
 * The text with every occurrence of a form replaced by a mark of what it stands for: at each
 * place the longest occurrence wins (a form as written before another's variant), and
 * occurrences do not overlap.
 */
export function anchor(text: string, forms: readonly Form[]): string {
  if (forms.length === 0) return text;
  const { key, at } = keyed(text);
  const found: { start: number; end: number; stands: string; written: boolean }[] = [];
  for (const form of forms)
    patternsOf(form.text).forEach((p, n) => {
      for (let k = key.indexOf(p.key); k >= 0; k = key.indexOf(p.key, k + 1)) {
        const span = occurrence(text, at, k, p);
        // The form as written (its first pattern) wins over another's ending or number at the
        // same place: "colony" is the option "colony", not the option "colonies" in the singular.
        if (span) found.push({ start: span[0], end: span[1], stands: form.stands, written: n === 0 });
      }
    });
  found.sort((a, b) => a.start - b.start || b.end - a.end || Number(b.written) - Number(a.written));
  let out = '';
  let pos = 0;
  for (const f of found) {
    if (f.start < pos) continue;
    const name = f.stands === ANSWER && writtenAsName(text, f.start, f.end) ? MARK_NAME : '';
    out += text.slice(pos, f.start) + MARK_OPEN + name + f.stands + MARK_CLOSE;
    pos = f.end;
  }
  return out + text.slice(pos);
}

const TITLE_WORD = /^[A-Z][a-z]/;
/** Initials in a name: "MC Hammer", "J.M.W. Turner". */
const INITIALS = /^(?:[A-Z]{1,2}|(?:[A-Z]\.)+)$/;

/**
 * writtenAsName: the occurrence is written as a proper name, each word capitalised ("Seymour
 * Hersh", "the Colorado River"), not only opened by a capital that starts a sentence. A name may
 * run on into a verb or a longer name ("Seymour Hersh first told ...") and still be the answer.
 */
function writtenAsName(text: string, start: number, end: number): boolean {
  const words = text.slice(start, end).split(/\s+/);
  const inside = (w: string, k: number) => k > 0 && k < words.length - 1 && RULES.nameParticles.has(w);
  if (!words.every((w, k) => TITLE_WORD.test(w) || INITIALS.test(w) || inside(w, k))) return false;
  if (!words.some((w) => TITLE_WORD.test(w))) return false;
  if (words.length > 1) return true;
  // One word that opens a sentence is a name when another capitalised word follows it ("Mozilla
  // Corporation"), not when its capital only opens the sentence ("Kinase inhibitors ...").
  let k = start - 1;
  while (k >= 0 && ` \t"'([\u201c\u201d`.includes(text[k]!)) k--;
  return (k >= 0 && !'.!?:\n'.includes(text[k]!)) || /^\s+[A-Z][a-z]/.test(text.slice(end, end + 3));
}
