// Names written shorter or fuller than the reference: a person's name without or with middle
// names ("Gregor Mendel" for Gregor Johann Mendel and the other way), and an abbreviation the
// output uses for the reference's words ("SA node" for sinoatrial node, "CSF" for cerebrospinal
// fluid). The Python twin is clients/python/bioalchemy_client/reward_names.py.

/**
 * One term written as a short form of the other: its letters, in order, within the other's, from
 * the same first letter ("SA node" of "sinoatrial node", "DNA" of "deoxyribonucleic acid", "IL-6"
 * of "interleukin 6"). A descriptor ("hormone" of "insulin") is not one.
 */
export function isShortForm(short: string, long: string): boolean {
  const s = short.toLowerCase().replace(/[^a-z]/g, '');
  const l = long.toLowerCase().replace(/[^a-z]/g, '');
  if (s.length === 0 || s.length >= l.length || s[0] !== l[0]) return false;
  let k = 0;
  for (const ch of l) if (ch === s[k]) k++;
  return k === s.length;
}

/** A word of a person's name ("Gregor", "McClintock", "O'Brien") or an initial ("J."). */
const NAME_WORD = /^(?:[A-Z][A-Za-z'-]*[a-z]|[A-Z]\.)$/;

/** The words of a person's name of two to four words, first and last written out, or null. */
function personName(form: string): string[] | null {
  // Accents dropped, as outputs often drop them ("Jose Rizal" for José Protasio Rizal).
  const words = form
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .trim()
    .split(/\s+/);
  if (words.length < 2 || words.length > 4 || !words.every((w) => NAME_WORD.test(w))) return null;
  return words[0]!.endsWith('.') || words.at(-1)!.endsWith('.') ? null : words;
}

/** shorterNames: a name of three or four words as its first and last ("Gregor Mendel"). */
export function shorterNames(accepted: readonly string[]): string[] {
  return accepted.flatMap((f) => {
    const words = personName(f);
    return words && words.length > 2 ? [`${words[0]} ${words.at(-1)}`] : [];
  });
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Can the abbreviation's letters be read off the words in order, each word giving its initial and
 * then any of its later letters? "SA" of [sinoatrial], "ATP" of [adenosine, triphosphate]; not
 * "ADP" of [adenosine, triphosphate] (triphosphate gives no D, and gives its T).
 */
function abbreviates(abbr: string, words: readonly string[]): boolean {
  if (words.length === 0) return abbr.length === 0;
  const [word, ...rest] = words;
  if (abbr.length === 0 || abbr[0] !== word![0]) return false;
  // Take 1..n letters of abbr from this word (its initial, then a subsequence of the rest).
  let k = 1;
  let pos = 1;
  for (;;) {
    if (abbreviates(abbr.slice(k), rest)) return true;
    if (k >= abbr.length) return false;
    const at = word!.indexOf(abbr[k]!, pos);
    if (at < 0) return false;
    pos = at + 1;
    k++;
  }
}

const ABBREVIATION = /\b[A-Z]{2,6}\b/g;

/**
 * writtenForms: the forms of the reference this output writes that no table lists: a person's name
 * with middle names or initials ("Gregor Johann Mendel" for Gregor Mendel), and an abbreviation
 * of the reference's first words before the rest of them ("SA node", "AV node") or of all its words
 * ("CSF"). Only what the text holds is returned, so a wrong abbreviation ("AV node" for sinoatrial
 * node) is never an accepted form.
 */
export function writtenForms(text: string, accepted: readonly string[]): string[] {
  const out: string[] = [];
  const abbreviations = [...new Set(text.match(ABBREVIATION) ?? [])];
  for (const form of accepted) {
    const name = personName(form);
    if (name) {
      const middle = String.raw`(?:\s+(?:[A-Z][A-Za-z'-]*[a-z]|[A-Z]\.)){1,2}`;
      const re = new RegExp(
        String.raw`\b${escapeRegExp(name[0]!)}${middle}\s+${escapeRegExp(name.at(-1)!)}\b`,
        'g',
      );
      out.push(...(text.match(re) ?? []));
      continue;
    }
    // A reference already in capitals or with digits ("IL-6", "TP53") is no phrase to abbreviate.
    if (/[A-Z]{2}|[0-9]/.test(form)) continue;
    const words = form.trim().split(/\s+/);
    for (const abbr of abbreviations)
      for (let k = 1; k <= words.length; k++) {
        const tail = words.slice(k);
        if (tail.length === 0 && k < 2) continue;
        const head = words
          .slice(0, k)
          .join(' ')
          .toLowerCase()
          .split(/[^a-z]+/)
          .filter((w) => w !== '');
        if (abbreviates(abbr.toLowerCase(), head)) out.push([abbr, ...tail].join(' '));
      }
  }
  return [...new Set(out)];
}
