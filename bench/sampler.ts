import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { computeSelection, ItemIndex, type SelectionParams } from '../processors/sampler/selection.js';
import { HeldOut } from '../schemas/mix-state.js';
import { generateItems, REFERENCE } from '../test/sampler/generated.js';

// `npm run bench -- sampler`: a full recompute of the mix over the paper's 345K QA items and ten
// times that, each size in a child process of its own so its peak memory is its own. The baseline,
// measured in the same child, is one pass over the index counting labels per topic: the least any
// recompute must do. The incremental cost is 1,000 new items added and the mix recomputed.

const PARAMS: SelectionParams = {
  alpha: 0.5,
  seed: 1,
  repeatCap: 1,
  maxSize: null,
  minTopicItems: 1,
  reference: REFERENCE,
  heldOut: HeldOut.parse({ publishedFrom: '2024-06' }),
};

interface Figures {
  readonly items: number;
  readonly buildMs: number;
  readonly recomputeMs: number;
  readonly scanMs: number;
  readonly incrementalMs: number;
  readonly size: number;
  readonly tvdTarget: number;
  readonly peakRssMb: number;
  readonly indexHeapMb: number;
}

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

function measure(n: number): Figures {
  const index = new ItemIndex();
  const heapBefore = process.memoryUsage().heapUsed;
  let buildMs = 0;
  // Generated in slices so the generator's objects never outweigh the index being measured.
  for (let from = 0; from < n; from += 100_000) {
    const slice = generateItems(Math.min(100_000, n - from), 11 + from / 100_000, 'bench');
    const started = performance.now();
    for (const it of slice) index.add(it);
    buildMs += performance.now() - started;
  }
  globalThis.gc?.();
  const indexHeapMb = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
  const scans: number[] = [];
  const recomputes: number[] = [];
  let last = computeSelection(index, PARAMS);
  for (let i = 0; i < 3; i++) {
    let started = performance.now();
    const perTopic = new Float64Array(index.categories.length);
    for (let j = 0; j < index.topicList.length; j++) perTopic[index.topicList[j]!]!++;
    scans.push(performance.now() - started);
    started = performance.now();
    last = computeSelection(index, PARAMS);
    recomputes.push(performance.now() - started);
  }
  const more = generateItems(1_000, 99, 'incremental');
  const started = performance.now();
  for (const it of more) index.add(it);
  computeSelection(index, PARAMS);
  const incrementalMs = performance.now() - started;
  return {
    items: n,
    buildMs,
    recomputeMs: median(recomputes),
    scanMs: median(scans),
    incrementalMs,
    size: last.metrics.size,
    tvdTarget: last.metrics.tvdTarget,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    indexHeapMb,
  };
}

function inChild(n: number): Figures {
  const child = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '--expose-gc',
      '--max-old-space-size=8192',
      fileURLToPath(import.meta.url),
      String(n),
    ],
    { encoding: 'utf8', maxBuffer: 1 << 20 },
  );
  if (child.status !== 0) throw new Error(`sampler bench child (${n} items) failed: ${child.stderr}`);
  return JSON.parse(child.stdout.trim().split('\n').at(-1)!) as Figures;
}

export async function run(): Promise<string[]> {
  const lines: string[] = [];
  const results: Figures[] = [];
  for (const n of [345_000, 3_450_000]) {
    const f = inChild(n);
    results.push(f);
    lines.push(
      `${f.items.toLocaleString('en-US')} items: full recompute ${f.recomputeMs.toFixed(0)} ms vs one counting pass ${f.scanMs.toFixed(1)} ms = ${(f.recomputeMs / f.scanMs).toFixed(1)}x; ` +
        `+1,000 items and recompute ${f.incrementalMs.toFixed(0)} ms; index built in ${f.buildMs.toFixed(0)} ms, ${f.indexHeapMb.toFixed(0)} MB heap; peak RSS ${f.peakRssMb.toFixed(0)} MB; ` +
        `mix ${f.size.toLocaleString('en-US')} copies, TVD to target ${f.tvdTarget.toFixed(4)}`,
    );
  }
  const [small, large] = results as [Figures, Figures];
  lines.push(
    `growth for 10x the items: recompute ${(large.recomputeMs / small.recomputeMs).toFixed(1)}x, counting pass ${(large.scanMs / small.scanMs).toFixed(1)}x, peak RSS ${(large.peakRssMb / small.peakRssMb).toFixed(1)}x`,
  );
  return lines;
}

// The child: one size, its figures as the last line of stdout.
if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2]) {
  process.stdout.write(`${JSON.stringify(measure(Number(process.argv[2])))}\n`);
}
