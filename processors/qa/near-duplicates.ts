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
 * Most ids one band keeps, those first in dedupOrder (so a band's members are the same whatever
 * order its questions came in). Shingles common to many questions ("which of the
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
 * A member of the band that the question just answered comes before and repeats: the member is a
 * duplicate of it, and if the join accepted it, the join withdraws it (processors/dedup/join.ts).
 */
export interface Overtaken {
  readonly qaId: string;
  readonly band: string;
  readonly by: string;
  readonly similarity: number;
}

/**
 * Where a question stands among its duplicates: the earliest publication first, then the QA id.
 * Of a group of duplicates the one first in this order is kept, wherever and whenever its copies
 * were processed: the order is the QA's content, not its arrival. Dates are padded so that a year
 * alone sorts with its own year ("2020" as "2020-00-00"); an unknown date sorts last.
 */
export function dedupOrder(qaId: string, published: string | null): string {
  const date = published === null ? '9999-99-99' : `${published}-00-00`.slice(0, 10);
  return `${date}/${qaId}`;
}

/** One member of a band: its QA id and dedupOrder. Bands written before orders hold bare ids. */
type Member = readonly [id: string, order: string];
const member = (m: string | Member): Member => (typeof m === 'string' ? [m, m] : m);

/**
 * The owner of band keys, over a state store (`exact:<hash>` -> member, `band:<i>:<rows>` ->
 * members, `sig:<id>` -> signature). Its rule is one that arrival order cannot change: a question
 * is a duplicate if a band it shares holds a near-duplicate that comes before it in dedupOrder.
 * So a question that reaches the owner after one it comes before overtakes it: the answer says the
 * newcomer repeats nothing here, and the member is reported overtaken. Every question is
 * registered, duplicate or not, so a later question is measured against the same members whatever
 * the order they came in; a band keeps the BAND_IDS members first in dedupOrder.
 */
export class BandOwner {
  constructor(
    private readonly store: StateStore,
    private readonly threshold = 0.8,
    private readonly cache = new SignatureCache(0),
  ) {}

  answer(
    id: string,
    { band, key }: QuestionBand,
    sig: readonly number[],
    order: string,
  ): { answer: BandAnswer; overtaken: Overtaken[] } {
    if (band === 'exact') {
      const held = this.store.get<string | Member>(key);
      const [first, firstOrder] = held === undefined ? [id, order] : member(held);
      if (first !== id && firstOrder < order)
        return { answer: { band, duplicateOf: first, similarity: 1 }, overtaken: [] };
      this.store.put(key, [id, order]);
      return {
        answer: { band, duplicateOf: null, similarity: 0 },
        overtaken: first === id ? [] : [{ qaId: first, band, by: id, similarity: 1 }],
      };
    }
    const members = (this.store.get<(string | Member)[]>(key) ?? []).map(member);
    let best: { of: string; order: string; similarity: number } | null = null;
    const overtaken: Overtaken[] = [];
    for (const [other, otherOrder] of members) {
      if (other === id) continue;
      let otherSig = this.cache.get(other);
      if (!otherSig) {
        otherSig = this.store.get<number[]>(`sig:${other}`);
        if (!otherSig) continue;
        this.cache.set(other, otherSig);
      }
      const s = similarity(sig, otherSig);
      if (s < this.threshold) continue;
      if (order < otherOrder) overtaken.push({ qaId: other, band, by: id, similarity: s });
      // The most similar earlier member; of equals, the first in dedupOrder.
      else if (!best || s > best.similarity || (s === best.similarity && otherOrder < best.order))
        best = { of: other, order: otherOrder, similarity: s };
    }
    // Put whatever the cache holds: a step that rolled back took its store write with it, not
    // the cache's copy.
    this.store.put(`sig:${id}`, sig);
    this.cache.set(id, sig);
    if (!members.some(([m]) => m === id)) {
      const kept = [...members, [id, order] as Member].sort((a, b) =>
        a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0,
      );
      this.store.put(key, kept.slice(0, BAND_IDS));
    }
    return {
      answer: best
        ? { band, duplicateOf: best.of, similarity: best.similarity }
        : { band, duplicateOf: null, similarity: 0 },
      overtaken,
    };
  }
}

/**
 * The decision from every band's answer: an exact duplicate first, else the most similar near
 * one (of equals, the smaller id), else none. The same function decides in one process and in
 * the streaming join, so both agree.
 */
export function duplicateFrom(
  answers: readonly BandAnswer[],
): { kind: 'exact' | 'near'; of: string; similarity: number } | null {
  const exact = answers.find((a) => a.band === 'exact' && a.duplicateOf !== null);
  if (exact) return { kind: 'exact', of: exact.duplicateOf!, similarity: 1 };
  let best: BandAnswer | null = null;
  for (const a of answers) {
    if (a.duplicateOf === null) continue;
    // Of equals, the smaller id: answers come in any order, the one named must not depend on it.
    if (
      !best ||
      a.similarity > best.similarity ||
      (a.similarity === best.similarity && a.duplicateOf < best.duplicateOf!)
    )
      best = a;
  }
  return best ? { kind: 'near', of: best.duplicateOf!, similarity: best.similarity } : null;
}

/**
 * Every band owned by one store, answered in turn: the whole index in one process (tests, the
 * decontamination bench's baseline). The pipeline spreads the same owners over partitions.
 */
export class NearDuplicateIndex {
  private readonly owner: BandOwner;

  constructor(
    private readonly store: StateStore,
    threshold = 0.8,
    cache = new SignatureCache(0),
  ) {
    this.owner = new BandOwner(store, threshold, cache);
  }

  /**
   * The indexed question this one repeats, if any. A question's dedupOrder is when it was first
   * checked, so the first of a group is kept and a replay is not its own duplicate. The question is
   * indexed in all its bands.
   */
  check(id: string, question: string): { kind: 'exact' | 'near'; of: string; similarity: number } | null {
    let order = this.store.get<string>(`order:${id}`);
    if (order === undefined) {
      const checked = this.store.get<number>('checked') ?? 0;
      order = String(checked).padStart(12, '0');
      this.store.put('checked', checked + 1);
      this.store.put(`order:${id}`, order);
    }
    const { signature: sig, bands } = questionBands(question);
    return duplicateFrom(bands.map((b) => this.owner.answer(id, b, sig, order).answer));
  }
}
