import { createHash } from 'node:crypto';
import type { StateStore } from '../../topology/processor.js';

/**
 * Near-duplicate questions by MinHash over word shingles with LSH banding, held in a state store
 * so the index survives restarts and follows the partition it serves. Two questions whose
 * estimated Jaccard similarity of 3-word shingles reaches the threshold are near-duplicates.
 */
const HASHES = 64;
const BANDS = 16;
const ROWS = HASHES / BANDS;
/** The signature's layout, for an index that bands signatures its own way (the eval index). */
export const MINHASH = { hashes: HASHES, bands: BANDS, rows: ROWS } as const;
const SHINGLE = 3;

/** Lower case, punctuation and extra spaces gone: "What is X?" and "what is x" are one text. */
export function normaliseQuestion(text: string): string {
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

/** The LSH band keys of a signature: two questions sharing one are compared (`band:<i>:<rows>`). */
function bandKeys(sig: readonly number[]): string[] {
  return Array.from(
    { length: BANDS },
    (_, b) => `band:${b}:${sig.slice(b * ROWS, (b + 1) * ROWS).join('.')}`,
  );
}

/**
 * Most ids one band keeps, the newest. Shingles common to many questions ("which of the
 * following") can make a band's rows the same for a large share of all questions: unbounded,
 * such a band's list grows with history, and each check read it and every signature in it (116
 * store reads a candidate after 6,000 templated questions, a seventh of the pipeline's CPU). A
 * near-duplicate (similarity 0.8) shares about 6.5 of the 16 bands, so one crowded band out of
 * its reach loses nothing; what it bounds is the work of a check: at most BANDS × BAND_IDS reads.
 */
const BAND_IDS = 16;

/**
 * Signatures by question id, the most recently used: a check compares with the newest ids of its
 * bands, mostly questions checked moments before, so most are here and not read from the store
 * again. A signature never changes (a question's id hashes its text), so one cached is never stale,
 * even if the step that stored it rolled back.
 */
export class SignatureCache {
  private readonly sigs = new Map<string, readonly number[]>();

  constructor(private readonly max = 8192) {}

  get(id: string): readonly number[] | undefined {
    const sig = this.sigs.get(id);
    if (sig) this.set(id, sig);
    return sig;
  }

  set(id: string, sig: readonly number[]): void {
    this.sigs.delete(id);
    this.sigs.set(id, sig);
    if (this.sigs.size > this.max) this.sigs.delete(this.sigs.keys().next().value!);
  }
}

/** The index over a processor's store: `exact:<hash>`, `band:<i>:<hash>` and `sig:<id>` keys. */
export class NearDuplicateIndex {
  constructor(
    private readonly store: StateStore,
    private readonly threshold = 0.8,
    private readonly cache = new SignatureCache(0),
  ) {}

  /**
   * The id of an indexed question this one duplicates exactly or nearly, if any; otherwise
   * indexes it under `id` and returns null.
   */
  check(id: string, question: string): { kind: 'exact' | 'near'; of: string; similarity: number } | null {
    const normalised = normaliseQuestion(question);
    const exactKey = `exact:${createHash('sha256').update(normalised).digest('hex').slice(0, 24)}`;
    const exact = this.store.get<string>(exactKey);
    if (exact !== undefined && exact !== id) return { kind: 'exact', of: exact, similarity: 1 };
    const sig = signature(normalised);
    const bands = bandKeys(sig);
    const members = bands.map((key) => (this.store.get<string[]>(key) ?? []).slice(-BAND_IDS));
    const candidates = new Set<string>();
    for (const ids of members) for (const other of ids) if (other !== id) candidates.add(other);
    let best: { of: string; similarity: number } | null = null;
    for (const other of candidates) {
      let otherSig = this.cache.get(other);
      if (!otherSig) {
        otherSig = this.store.get<number[]>(`sig:${other}`);
        if (!otherSig) continue;
        this.cache.set(other, otherSig);
      }
      const s = similarity(sig, otherSig);
      if (s >= this.threshold && (!best || s > best.similarity)) best = { of: other, similarity: s };
    }
    if (best) return { kind: 'near', ...best };
    this.store.put(exactKey, id);
    this.store.put(`sig:${id}`, sig);
    this.cache.set(id, sig);
    bands.forEach((key, b) => {
      const ids = members[b]!;
      if (!ids.includes(id)) this.store.put(key, [...ids, id].slice(-BAND_IDS));
    });
    return null;
  }
}
