/**
 * Whether a text is English, by the share of its words that are common English function words:
 * science English runs at 25-45% of them, other languages written in Latin script at a few
 * percent, other scripts at none. Short texts (a question) are judged on a lower bar, and texts
 * too short to judge pass.
 */
const FUNCTION_WORDS = new Set(
  (
    'the of and a an in to is are was were be been by for with on at from as that this these those which what ' +
    'how why when where who whom whose does do did it its or not than into between during under over after before ' +
    'can could would should may might will most more less each both such their there has have had if then also only'
  ).split(' '),
);

export function englishShare(text: string): { words: number; share: number } {
  const words = text.toLowerCase().match(/\p{L}+/gu) ?? [];
  if (words.length === 0) return { words: 0, share: 0 };
  let hits = 0;
  for (const w of words) if (FUNCTION_WORDS.has(w)) hits++;
  return { words: words.length, share: hits / words.length };
}

export function looksEnglish(text: string): boolean {
  const { words, share } = englishShare(text);
  if (words < 6) return true;
  return share >= (words < 40 ? 0.08 : 0.12);
}
