/**
 * Recognises section headings in unstructured text (plain text files, PDF text), where the only
 * structure is a short line naming a section: 'Introduction', '2. Methods', 'RESULTS AND DISCUSSION'.
 */
export type HeadingKind = 'abstract' | 'references' | 'admin' | 'section';

export interface Heading {
  readonly title: string;
  readonly kind: HeadingKind;
  /** Text after 'Abstract:' / 'Summary.' on the same line, when the heading runs into its paragraph. */
  readonly rest: string;
  /** Its numbering without the final dot ('2.1'), which says what it nests under. */
  readonly number: string | null;
}

const KINDS: [RegExp, HeadingKind][] = [
  [/^(abstract|summary)$/i, 'abstract'],
  [/^(references?|bibliography|literature cited|works cited|references and notes)$/i, 'references'],
  [
    /^(acknowledge?ments?|author(s'|'s)? contributions?|competing interests?|conflicts? of interests?|funding|declarations?|ethics statement|data availability( statement)?|supplementary (material|information)|supporting information)$/i,
    'admin',
  ],
  [
    /^(background|introduction|methods?|materials and methods|methods and materials|material and methods|experimental( procedures| section)?|results|discussion|results and discussion|conclusions?|concluding remarks|general discussion|significance|limitations|outlook|case report|case presentation|study design|statistical analysis)$/i,
    'section',
  ],
];

const NUMBERING = /^((?:\d+|[IVXivx]+|[A-Z])(?:\.\d+)*)\.?\s+/;

function kindOf(title: string): HeadingKind | null {
  for (const [re, kind] of KINDS) if (re.test(title)) return kind;
  return null;
}

/**
 * A line that is a heading: a known section name (numbered or not, any case, optional colon),
 * or a short numbered title like '2.1 Sample collection'. A title numbered at one level only
 * ('3 Results') must stand alone (`alone`), since '1. The cells were…' starts many list items.
 */
export function headingOf(line: string, alone: boolean): Heading | null {
  const s = line.trim();
  if (!s || s.length > 100) return null;
  const numbered = NUMBERING.exec(s);
  const number = numbered ? numbered[1]! : null;
  const body = numbered ? s.slice(numbered[0].length) : s;
  const runIn = /^(abstract|summary|background)\s*[:.—–-]\s+(\S.*)$/i.exec(body);
  if (runIn) return { title: runIn[1]!, kind: kindOf(runIn[1]!) ?? 'section', rest: runIn[2]!, number };
  const title = body.replace(/\s*:$/, '').trim();
  const kind = kindOf(title);
  if (kind) return { title, kind, rest: '', number };
  const words = title.split(/\s+/).length;
  const multiLevel = number?.includes('.') ?? false;
  if ((alone || multiLevel) && number && words <= 10 && /^[A-Z]/.test(title) && !/[.;,]$/.test(title)) {
    return { title, kind: 'section', rest: '', number };
  }
  return null;
}

/** 'Methods / Animal collection' for '2.1' when '2' was 'Methods': numbering gives the nesting. */
export class HeadingPath {
  private readonly byNumber = new Map<string, string>();

  headingFor(title: string, number: string | null): string {
    if (!number) return title;
    this.byNumber.set(number, title);
    const parts = number.split('.');
    const parents = parts.slice(0, -1).map((_, i) => this.byNumber.get(parts.slice(0, i + 1).join('.')));
    return [...parents.filter((p): p is string => !!p), title].join(' / ');
  }
}

/** 'INTRODUCTION' -> 'Introduction'; mixed case is left as written. */
export function displayHeading(title: string): string {
  return title === title.toUpperCase() && /[A-Z]/.test(title)
    ? title.charAt(0) + title.slice(1).toLowerCase()
    : title;
}
