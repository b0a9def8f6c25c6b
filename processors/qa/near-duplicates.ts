import { createHash } from 'node:crypto';
import { MINHASH, normaliseText, signature, similarity } from '../../sources/minhash.js';
import type { StateStore } from '../../topology/processor.js';

/**
 * Near-duplicate questions by MinHash (sources/minhash.ts) with LSH banding, held in state stores
 * so the index survives restarts and follows the partition it serves. Two questions whose
 * estimated Jaccard similarity of 3-word shingles reaches the threshold are near-duplicates.
 */
const { bands: BANDS, rows: ROWS } = MINHASH;

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

/** One band of a question: `exact` (its normalised text's hash) or an LSH band of its signature. */
export interface QuestionBand {
  readonly band: string;
  readonly key: string;
}

/** How many bands every question has: the exact one and the LSH bands. */
export const BAND_COUNT = BANDS + 1;

/** A question's signature and its bands: two questions sharing a band key are compared. */
export function questionBands(question: string): { signature: number[]; bands: QuestionBand[] } {
  const normalised = normaliseText(question);
  const sig = signature(normalised);
  const exact = createHash('sha256').update(normalised).digest('hex').slice(0, 24);
  return {
    signature: sig,
    bands: [
      { band: 'exact', key: `exact:${exact}` },
      ...Array.from({ length: BANDS }, (_, b) => ({
        band: String(b),
        key: `band:${b}:${sig.slice(b * ROWS, (b + 1) * ROWS).join('.')}`,
      })),
    ],
  };
}

/** What one band's owner says of a question: the member it repeats, if any. */
export interface BandAnswer {
  readonly band: string;
  readonly duplicateOf: string | null;
  readonly similarity: number;
}

/**
 * The owner of band keys, over a state store (`exact:<hash>` -> id, `band:<i>:<rows>` -> ids,
 * `sig:<id>` -> signature). It answers in the order questions reach it, and registers a question
 * in a band only when the band holds no duplicate of it: a duplicate is never what a later
 * question is measured against there.
 */
export class BandOwner {
  constructor(
    private readonly store: StateStore,
    private readonly threshold = 0.8,
    private readonly cache = new SignatureCache(0),
  ) {}

  answer(id: string, { band, key }: QuestionBand, sig: readonly number[]): BandAnswer {
    if (band === 'exact') {
      const first = this.store.get<string>(key);
      if (first !== undefined && first !== id) return { band, duplicateOf: first, similarity: 1 };
      this.store.put(key, id);
      return { band, duplicateOf: null, similarity: 0 };
    }
    const members = (this.store.get<string[]>(key) ?? []).slice(-BAND_IDS);
    let best: { of: string; similarity: number } | null = null;
    for (const other of members) {
      if (other === id) continue;
      let otherSig = this.cache.get(other);
      if (!otherSig) {
        otherSig = this.store.get<number[]>(`sig:${other}`);
        if (!otherSig) continue;
        this.cache.set(other, otherSig);
      }
      const s = similarity(sig, otherSig);
      if (s >= this.threshold && (!best || s > best.similarity)) best = { of: other, similarity: s };
    }
    if (best) return { band, duplicateOf: best.of, similarity: best.similarity };
    // Put whatever the cache holds: a step that rolled back took its store write with it, not
    // the cache's copy.
    this.store.put(`sig:${id}`, sig);
    this.cache.set(id, sig);
    if (!members.includes(id)) this.store.put(key, [...members, id].slice(-BAND_IDS));
    return { band, duplicateOf: null, similarity: 0 };
  }
}

/**
 * The decision from every band's answer: an exact duplicate first, else the most similar near
 * one (the first band's on a tie), else none. The same function decides in one process and in
 * the streaming join, so both agree.
 */
export function duplicateFrom(
  answers: readonly BandAnswer[],
): { kind: 'exact' | 'near'; of: string; similarity: number } | null {
  const exact = answers.find((a) => a.band === 'exact' && a.duplicateOf !== null);
  if (exact) return { kind: 'exact', of: exact.duplicateOf!, similarity: 1 };
  let best: BandAnswer | null = null;
  for (const a of answers) if (a.duplicateOf !== null && (!best || a.similarity > best.similarity)) best = a;
  return best ? { kind: 'near', of: best.duplicateOf!, similarity: best.similarity } : null;
}

/**
 * Every band owned by one store, answered in turn: the whole index in one process (tests, the
 * decontamination bench's baseline). The pipeline spreads the same owners over partitions.
 */
export class NearDuplicateIndex {
  private readonly owner: BandOwner;

  constructor(store: StateStore, threshold = 0.8, cache = new SignatureCache(0)) {
    this.owner = new BandOwner(store, threshold, cache);
  }

  /** The indexed question this one repeats, if any; the question is indexed where its bands hold none. */
  check(id: string, question: string): { kind: 'exact' | 'near'; of: string; similarity: number } | null {
    const { signature: sig, bands } = questionBands(question);
    return duplicateFrom(bands.map((b) => this.owner.answer(id, b, sig)));
  }
}
