import {
  BandOwner,
  dedupOrder,
  NearDuplicateIndex,
  questionBands,
  SignatureCache,
} from '../processors/qa/near-duplicates.js';
import { BandVerdict, QaBand } from '../schemas/dedup.js';
import type { StateStore } from '../topology/processor.js';
import { fmt } from './harness.js';

// `npm run bench -- dedup`: the cost per accepted QA of the global near-duplicate control
// (processors/dedup/: 17 band records, each owner's answer, 17 verdicts, the join), at the paper's
// size (345,000 QA), beside what grade did before in the same run: one index over its own
// partition's store (NearDuplicateIndex, every band in one store). Both over in-memory stores, so
// the figure is the work on the event loop (hashing, the records' JSON and schema checks, store
// reads), not the log's I/O. Questions: one template with two words changed (the crowded bands
// that bound the index), one in ten a near-duplicate of an earlier one. Printed per window of
// 10,000 QA, first and last: a check must cost the same after 345,000 as after 10,000.

const TOTAL = Number(process.env.BENCH_DEDUP_QA ?? 345_000);
const WINDOW = 10_000;
const PARTITIONS = 4;

class MapStore implements StateStore {
  readonly map = new Map<string, unknown>();
  get<T>(key: string): T | undefined {
    return this.map.get(key) as T | undefined;
  }
  put(key: string, value: unknown): void {
    this.map.set(key, value);
  }
  delete(key: string): void {
    this.map.delete(key);
  }
}

const words = Array.from({ length: 2000 }, (_, i) => `term${i.toString(36)}`);
function question(i: number): string {
  if (i % 10 === 9) return question(i - 7).replace('of cells', 'of living cells');
  return `Which ${words[i % 2000]} is most closely associated with ${words[Math.floor(i / 2000) % 2000]} when the role of ${words[(i * 7 + 3) % 2000]} is considered in the study of cells?`;
}

const partitionOf = (key: string) => {
  let h = 0;
  for (let i = 0; i < key.length; i++) h = (Math.imul(h, 31) + key.charCodeAt(i)) | 0;
  return Math.abs(h) % PARTITIONS;
};

/** Microseconds per QA over each window, and how many QA it found duplicates. */
function measure(check: (id: string, q: string) => boolean): {
  firstUs: number;
  lastUs: number;
  dups: number;
} {
  let dups = 0;
  const windows: number[] = [];
  let started = performance.now();
  for (let i = 0; i < TOTAL; i++) {
    // Ids in arrival order, as the one-process index orders questions: both keep the same ones.
    if (check(`q${String(i).padStart(7, '0')}`, question(i))) dups++;
    if ((i + 1) % WINDOW === 0) {
      windows.push(((performance.now() - started) * 1000) / WINDOW);
      started = performance.now();
    }
  }
  return { firstUs: windows[0]!, lastUs: windows.at(-1)!, dups };
}

export async function run(): Promise<string[]> {
  // Today's grade: one partition's index, all bands in one store.
  const index = new NearDuplicateIndex(new MapStore(), 0.8, new SignatureCache());
  const before = measure((id, q) => index.check(id, q) !== null);

  // The streaming path: band records out of grade, an owner per band partition, the join by id.
  const owners = Array.from(
    { length: PARTITIONS },
    () => new BandOwner(new MapStore(), 0.8, new SignatureCache()),
  );
  // The join's store: answers counted per QA still answering, and a mark per QA it accepted.
  const join = new MapStore();
  let withdrawn = 0;
  const verdictOf = (v: object) => BandVerdict.parse(JSON.parse(JSON.stringify(v)));
  const after = measure((id, q) => {
    const { signature, bands } = questionBands(q);
    const order = dedupOrder(id, null);
    let duplicate = false;
    for (const { band, key } of bands) {
      // Each record as the log carries it: encoded by grade, decoded and checked by its reader.
      const record = QaBand.parse(
        JSON.parse(JSON.stringify({ qaId: id, band, bands: bands.length, signature, order })),
      );
      const { answer, overtaken } = owners[partitionOf(key)]!.answer(
        record.qaId,
        { band, key },
        record.signature,
        record.order!,
      );
      const verdict = verdictOf({ ...answer, qaId: id, bands: bands.length });
      if (verdict.duplicateOf !== null) duplicate = true;
      const seen = join.get<number>(id) ?? 0;
      if (seen + 1 < verdict.bands) join.put(id, seen + 1);
      else {
        join.delete(id);
        if (!duplicate) join.put(`accepted:${id}`, 1);
      }
      for (const o of overtaken) {
        const v = verdictOf({
          qaId: o.qaId,
          band: o.band,
          bands: bands.length,
          duplicateOf: o.by,
          similarity: o.similarity,
          overtaken: true,
        });
        if (join.get(`accepted:${v.qaId}`) === undefined) continue;
        join.delete(`accepted:${v.qaId}`);
        withdrawn++;
      }
    }
    return duplicate;
  });
  const keys = owners.reduce((n, o) => n + ((o as unknown as { store: MapStore }).store.map.size ?? 0), 0);
  return [
    `${fmt(TOTAL)} QA, ${PARTITIONS} band partitions; duplicates found: before ${fmt(before.dups)}, after ${fmt(after.dups)}`,
    `per QA, first ${fmt(WINDOW)}: ${after.firstUs.toFixed(1)} µs (band records + owners + join) vs ${before.firstUs.toFixed(1)} µs (one partition's index) = ${(after.firstUs / before.firstUs).toFixed(2)}x`,
    `per QA, last ${fmt(WINDOW)}: ${after.lastUs.toFixed(1)} µs vs ${before.lastUs.toFixed(1)} µs = ${(after.lastUs / before.lastUs).toFixed(2)}x; growth over the run: ${(after.lastUs / after.firstUs).toFixed(2)}x (before ${(before.lastUs / before.firstUs).toFixed(2)}x)`,
    `withdrawn after acceptance (ids follow arrival here, as new literature mostly does): ${fmt(withdrawn)}`,
    `band owners' store keys: ${fmt(keys)}; the join holds ${fmt(join.map.size)} keys at the end (a mark per accepted QA, none still answering)`,
  ];
}
