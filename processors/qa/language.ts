/**
 * Whether a text is English. Function words give it away: science English runs at 25-45% of
 * them, and so do other languages with their own. A text is taken as not English when its letters
 * are mostly outside the Latin script, or when another language's function words outnumber
 * English ones; a text with neither (a list of terms, a short heading) gets the benefit of the
 * doubt.
 */
const words = (list: string) => new Set(list.split(' '));
const ENGLISH = words(
  'the of and a an in to is are was were be been by for with on at from as that this these those which what ' +
    'how why when where who whose does do did it its or not than into between during under over after before ' +
    'can could would should may might will most more less each both such their there has have had if then also only',
);
const OTHERS = [
  // German, French, Spanish, Italian, Portuguese, Dutch: articles, prepositions, conjunctions.
  words(
    'der die das und ist nicht mit von zu den dem des ein eine einer auf für sich auch werden wurde bei nach',
  ),
  words(
    'le la les des du et est une un dans pour pas sur au aux par avec ce cette qui sont été plus être ont',
  ),
  words('el los las del y es una unos por para con que se su sus al como más fue son entre sobre este esta'),
  words(
    'il lo gli della delle dei nel nella che è sono per con una un gli anche dal alla delle stato questo',
  ),
  words('os as do da dos das em no na uma um para com que não por se mais foi são pelo pela este esta'),
  words('het een van en de is op te dat die niet met zijn voor ook bij wordt werd door naar deze'),
];

function share(tokens: readonly string[], set: ReadonlySet<string>): number {
  let hits = 0;
  for (const t of tokens) if (set.has(t)) hits++;
  return hits / tokens.length;
}

export function looksEnglish(text: string): boolean {
  const letters = text.match(/\p{L}/gu) ?? [];
  if (letters.length === 0) return true;
  const latin = (text.match(/\p{Script=Latin}/gu) ?? []).length;
  if (latin / letters.length < 0.5) return false;
  const tokens = text.toLowerCase().match(/\p{L}+/gu) ?? [];
  if (tokens.length < 8) return true;
  const english = share(tokens, ENGLISH);
  const other = Math.max(...OTHERS.map((set) => share(tokens, set)));
  return !(other > english && english < 0.1);
}
