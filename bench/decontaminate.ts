import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { deterministicChecks } from '../processors/qa/checks.js';
import { EvalIndex, EvalSets, parseEvalSet } from '../processors/qa/decontaminate.js';
import { NearDuplicateIndex } from '../processors/qa/near-duplicates.js';
import { Config } from '../schemas/config.js';
import type { QaCandidate } from '../schemas/qa.js';
import type { StateStore } from '../topology/processor.js';

// `npm run bench -- decontaminate`: grade's eval-set check per candidate with 100,000 eval items
// (question + 4 options, some with a PMID), against a baseline measured in the same run: what
// grade does per candidate without eval sets (its deterministic checks and its MinHash dedup over
// an in-memory store). Also the check with 1,000 items (the cost should not grow with the set),
// the index's build time and heap, and a reload of the 100,000 as the watcher does it (read,
// parse, index with yields). Candidates: 10,000, one in ten a copy of an eval item.

const EVAL_ITEMS = Number(process.env.BENCH_EVAL_ITEMS ?? 100_000);
const CANDIDATES = 10_000;

/** A deterministic pseudo-vocabulary of 6,000 words, so 13-grams are as rare as in real text. */
function generator(seed: number) {
  let s = seed >>> 0;
  const random = () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 2 ** 32;
  };
  const syllables = 'ba ce di fo gu ka le mi no pu ra se ti vo zu tra pre gli mon sul'.split(' ');
  const vocabulary = Array.from({ length: 6000 }, (_, i) => {
    let w = '';
    for (let k = i; w.length < 4 || k > 0; k = Math.floor(k / syllables.length))
      w += syllables[k % syllables.length];
    return w;
  });
  const words = (n: number) =>
    Array.from({ length: n }, () => vocabulary[Math.floor(random() ** 1.5 * vocabulary.length)]).join(' ');
  return { random, words };
}

function evalItems(n: number) {
  const g = generator(7);
  return Array.from({ length: n }, (_, i) => ({
    id: `item-${i}`,
    question: `What ${g.words(14 + Math.floor(g.random() * 12))}?`,
    options: Array.from({ length: 4 }, () => g.words(3 + Math.floor(g.random() * 5))),
    ...(i % 4 === 0 ? { pmid: String(30_000_000 + i) } : {}),
  }));
}

function candidates(items: ReturnType<typeof evalItems>): QaCandidate[] {
  const g = generator(99);
  return Array.from({ length: CANDIDATES }, (_, i) => {
    const copy = i % 10 === 0 ? items[(i * 7919) % items.length] : undefined;
    const question = copy ? copy.question : `Which ${g.words(12 + Math.floor(g.random() * 14))}?`;
    const options = copy
      ? copy.options
      : Array.from({ length: 4 }, () => g.words(2 + Math.floor(g.random() * 4)));
    return {
      id: `c${i}`,
      articleId: `pmid:${40_000_000 + i}`,
      articleTitle: 'A title of an article',
      passage: { sectionIndex: -1, start: 0, end: 10, text: 'Some text.' },
      kind: 'multiple-choice',
      question,
      options,
      answer: 'A',
      rationale: '',
      provenance: {
        articleId: `pmid:${40_000_000 + i}`,
        source: 'bench',
        licence: null,
        journal: null,
        published: null,
        articleMesh: [],
        workIds: [],
      },
      generatedBy: { model: 'm', promptVersion: 'p' },
    } satisfies QaCandidate;
  });
}

function memoryStore(): StateStore {
  const m = new Map<string, unknown>();
  return {
    get: <T>(k: string) => m.get(k) as T | undefined,
    put: (k, v) => void m.set(k, v),
    delete: (k) => void m.delete(k),
  };
}

// The heap figure needs a collection before and after; the flag set now exposes gc to a new context.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Memory the index holds: the heap and the typed arrays' buffers (outside the heap). */
const held = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

/** µs per candidate of `each` over the candidates, the median of 3 passes, each with a fresh `each`. */
function perCandidate(cs: readonly QaCandidate[], fresh: () => (c: QaCandidate) => unknown): number {
  const passes: number[] = [];
  for (let p = 0; p < 3; p++) {
    const each = fresh();
    const started = performance.now();
    for (const c of cs) each(c);
    passes.push(((performance.now() - started) * 1000) / cs.length);
  }
  return median(passes);
}

async function indexOver(items: ReturnType<typeof evalItems>) {
  const set = parseEvalSet('/bench/eval.jsonl', Buffer.from(items.map((i) => JSON.stringify(i)).join('\n')));
  gc();
  const heapBefore = held();
  const started = performance.now();
  const index = new EvalIndex(0.8);
  index.add(set);
  const buildMs = performance.now() - started;
  gc();
  return { index, buildMs, heapMb: (held() - heapBefore) / 2 ** 20 };
}

export async function run(): Promise<string[]> {
  const grade = Config.parse({}).grade;
  const items = evalItems(EVAL_ITEMS);
  const cs = candidates(items);
  const checkOf = (index: EvalIndex) => (c: QaCandidate) =>
    index.check({ ...c, options: c.kind === 'multiple-choice' ? c.options : [] });

  // The dedup index fresh each pass: a second pass over the same questions would find them all
  // exact duplicates and stop early.
  const baselineUs = perCandidate(cs, () => {
    const dedup = new NearDuplicateIndex(memoryStore(), grade.nearDuplicate);
    return (c) => {
      deterministicChecks(c, grade);
      dedup.check(c.id, c.question);
    };
  });
  const big = await indexOver(items);
  const small = await indexOver(items.slice(0, 1000));
  const bigUs = perCandidate(cs, () => checkOf(big.index));
  const smallUs = perCandidate(cs, () => checkOf(small.index));
  const hits = cs.filter((c) => checkOf(big.index)(c).length > 0).length;

  // A reload as the watcher does it: read the file, parse, index yielding to the event loop;
  // the loop's longest stall while it runs is what a step waits at most.
  const dir = mkdtempSync(join(tmpdir(), 'bench-decontaminate-'));
  const file = join(dir, 'eval.jsonl');
  writeFileSync(file, items.map((i) => JSON.stringify(i)).join('\n'));
  let reloadMs = 0;
  let longestStallMs = 0;
  try {
    const sets = new EvalSets({ paths: [dir], threshold: 0.8, maxBytes: 2 ** 30, pollMs: 1 });
    writeFileSync(file, `${items.map((i) => JSON.stringify(i)).join('\n')}\n`);
    let last = performance.now();
    const ticker = setInterval(() => {
      const now = performance.now();
      longestStallMs = Math.max(longestStallMs, now - last);
      last = now;
    }, 1);
    await new Promise((r) => setTimeout(r, 5));
    const started = performance.now();
    await sets.current();
    reloadMs = performance.now() - started;
    clearInterval(ticker);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const mb = items.map((i) => JSON.stringify(i)).join('\n').length / 2 ** 20;
  return [
    `eval items ${EVAL_ITEMS.toLocaleString('en-US')} (${mb.toFixed(1)} MB of JSON lines), candidates ${CANDIDATES.toLocaleString('en-US')} (${hits} matched; 1 in 10 is a copy of an item)`,
    `baseline (grade without eval sets: checks + MinHash dedup): ${baselineUs.toFixed(1)} µs/candidate`,
    `eval-set check, ${EVAL_ITEMS.toLocaleString('en-US')} items: ${bigUs.toFixed(1)} µs/candidate = ${(bigUs / baselineUs).toFixed(2)}x baseline`,
    `eval-set check, 1,000 items: ${smallUs.toFixed(1)} µs/candidate = ${(smallUs / baselineUs).toFixed(2)}x baseline (the ${EVAL_ITEMS.toLocaleString('en-US')}-item check is ${(bigUs / smallUs).toFixed(2)}x this)`,
    `index build ${EVAL_ITEMS.toLocaleString('en-US')} items: ${big.buildMs.toFixed(0)} ms, heap and buffers ${big.heapMb.toFixed(0)} MB`,
    `reload as the watcher does it (read, parse, index with yields): ${reloadMs.toFixed(0)} ms, longest event-loop stall ${longestStallMs.toFixed(0)} ms`,
  ];
}
