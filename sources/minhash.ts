import { createHash } from 'node:crypto';

/**
 * MinHash signatures of text over word 3-gram shingles: two texts whose signatures agree in a
 * share s of their 64 places have an estimated Jaccard similarity s. Questions (grade's
 * duplicates, eval sets) and abstracts (the records of one work) are compared this way.
 */
const HASHES = 64;
const BANDS = 16;
const ROWS = HASHES / BANDS;
/** The signature's layout: LSH indexes band it into `bands` bands of `rows` places. */
export const MINHASH = { hashes: HASHES, bands: BANDS, rows: ROWS } as const;
const SHINGLE = 3;

/** Lower case, punctuation and extra spaces gone: "What is X?" and "what is x" are one text. */
export function normaliseText(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

function shingles(normalised: string): string[] {
  const words = normalised.split(' ').filter(Boolean);
  if (words.length < SHINGLE) return [words.join(' ')];
  const out = new Set<string>();
  for (let i = 0; i + SHINGLE <= words.length; i++) out.add(words.slice(i, i + SHINGLE).join(' '));
  return [...out];
}

// 64 seeds from one fixed digest: the same signature for the same text in every process, forever.
const SEEDS = (() => {
  const digest = createHash('sha512').update('bioalchemy-minhash-v1').digest();
  const seeds: number[] = [];
  for (let i = 0; i < HASHES; i++)
    seeds.push((digest.readUInt32LE((i * 4) % 60) ^ Math.imul(i + 1, 0x9e3779b1)) >>> 0);
  return seeds;
})();

/** FNV-1a of a string with a seed: cheap and stable; MinHash needs only a family of independent-ish hashes. */
function hash(text: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  // A final avalanche, so seeds differing in few bits give unrelated orders.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  return h >>> 0;
}

export function signature(normalised: string): number[] {
  const sh = shingles(normalised);
  return SEEDS.map((seed) => {
    let min = 0xffffffff;
    for (const s of sh) min = Math.min(min, hash(s, seed));
    return min;
  });
}

export function similarity(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let same = 0;
  for (let i = 0; i < HASHES; i++) if (a[i] === b[i]) same++;
  return same / HASHES;
}
