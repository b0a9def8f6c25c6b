/**
 * Sentence boundaries in scientific prose, as character spans. A full stop ends a sentence only
 * when what follows looks like a new one (a capital, digit, quote or bracket after whitespace)
 * and what precedes is not an abbreviation scientists use ('et al.', 'Fig.', 'e.g.', 'sp.') or an initial.
 */
export interface Span {
  start: number;
  end: number;
}

const ABBREVIATIONS = new Set(
  [
    'al',
    'e.g',
    'i.e',
    'fig',
    'figs',
    'eq',
    'eqs',
    'ref',
    'refs',
    'vs',
    'cf',
    'ca',
    'approx',
    'etc',
    'no',
    'nos',
    'vol',
    'pp',
    'p',
    'sp',
    'spp',
    'var',
    'subsp',
    'dr',
    'mr',
    'mrs',
    'ms',
    'prof',
    'st',
    'inc',
    'ltd',
    'co',
    'jr',
    'sr',
    'resp',
    'suppl',
    'tab',
    'chap',
    'sect',
    'min',
    'max',
    'mol',
    'wt',
    'conc',
    'temp',
    'u.s',
  ].map((a) => a.toLowerCase()),
);

const BOUNDARY = /[.!?]["'’”)\]]*(?=\s+["'‘“([]?[A-Z0-9])/g;

export function sentenceSpans(text: string, from = 0, to = text.length): Span[] {
  const spans: Span[] = [];
  const s = text.slice(from, to);
  let start = 0;
  BOUNDARY.lastIndex = 0;
  for (let m = BOUNDARY.exec(s); m; m = BOUNDARY.exec(s)) {
    const end = m.index + m[0].length;
    if (m[0][0] === '.') {
      const word = /(\S+)$/.exec(s.slice(start, m.index))?.[1] ?? '';
      const bare = word.replace(/^[("'[]+/, '').toLowerCase();
      if (ABBREVIATIONS.has(bare) || /^[A-Z]$/.test(word.replace(/^[("'[]+/, ''))) continue;
    }
    if (s.slice(start, end).trim()) spans.push(trim(s, start, end, from));
    start = end;
  }
  if (s.slice(start).trim()) spans.push(trim(s, start, s.length, from));
  return spans;
}

function trim(s: string, start: number, end: number, offset: number): Span {
  while (start < end && /\s/.test(s[start]!)) start++;
  while (end > start && /\s/.test(s[end - 1]!)) end--;
  return { start: start + offset, end: end + offset };
}
