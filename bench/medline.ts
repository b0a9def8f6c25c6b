import { spawn } from 'node:child_process';
import { createReadStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TextDecoder } from 'node:util';
import { SaxesParser } from 'saxes';
import { readMedline } from '../sources/medline.js';
import { writePubmedFile } from '../test/sources/helpers/medline-gen.js';
import { fmt, ratioLine } from './harness.js';

/**
 * The MEDLINE reader against the SAX parser it is built on, on the same bytes: articles/s of the
 * full reader (decode, parse, one element tree per record, article building, zod validation) vs
 * records/s of saxes alone counting </PubmedArticle>. Each measurement runs in a fresh process, so
 * peak RSS is that run's own; it must not grow with the file (a 4x larger file, the same memory),
 * since a baseline file is streamed, never held.
 */
const CHILD = 'BIOALCHEMY_BENCH_MEDLINE_CHILD';

interface Measure {
  records: number;
  seconds: number;
  maxRssMB: number;
  heapPeakMB: number;
  /** Largest heap left after a full GC, taken every 20,000 records: what the reader actually keeps. */
  retainedMB: number;
}

// The child runs with --expose-gc; the collections it forces are outside the timed part's hot loop
// often enough to matter little (one per 20,000 records) and are the same for both measurements.
const gc = (globalThis as { gc?: () => void }).gc;
let retained = 0;
function sampleRetained(): void {
  if (!gc) return;
  gc();
  retained = Math.max(retained, process.memoryUsage().heapUsed);
}

async function measureReader(path: string): Promise<Measure> {
  let records = 0;
  let heapPeak = 0;
  const started = performance.now();
  for await (const item of readMedline(path)) {
    if (item.kind !== 'article') continue;
    records++;
    if (records % 2000 === 0) heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
    if (records % 20_000 === 0) sampleRetained();
  }
  return finish(records, started, heapPeak);
}

async function measureSax(path: string): Promise<Measure> {
  let records = 0;
  let heapPeak = 0;
  const parser = new SaxesParser({ xmlns: false, position: true });
  parser.on('closetag', (tag) => {
    if (tag.name !== 'PubmedArticle') return;
    records++;
    if (records % 2000 === 0) heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
    if (records % 20_000 === 0) sampleRetained();
  });
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const started = performance.now();
  for await (const chunk of createReadStream(path, { highWaterMark: 256 * 1024 })) {
    parser.write(decoder.decode(chunk as Buffer, { stream: true }));
  }
  parser.close();
  return finish(records, started, heapPeak);
}

function finish(records: number, started: number, heapPeak: number): Measure {
  return {
    records,
    seconds: (performance.now() - started) / 1000,
    maxRssMB: process.resourceUsage().maxRSS / 1024,
    heapPeakMB: heapPeak / 2 ** 20,
    retainedMB: retained / 2 ** 20,
  };
}

/** Runs one measurement in a new Node process (with the tsx loader this module was started with). */
function inChild(mode: 'reader' | 'sax', path: string): Promise<Measure> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url)],
      {
        env: { ...process.env, [CHILD]: JSON.stringify({ mode, path }) },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`bench child (${mode}) exited with ${code}`));
      else resolve(JSON.parse(out) as Measure);
    });
  });
}

export interface MedlineBenchOptions {
  sizes?: number[];
}

export async function run(opts: MedlineBenchOptions = {}): Promise<string[]> {
  const sizes = opts.sizes ?? [50_000, 200_000];
  const dir = mkdtempSync(join(tmpdir(), 'bioalchemy-bench-medline-'));
  const lines: string[] = [];
  const results: { n: number; reader: Measure; sax: Measure }[] = [];
  try {
    for (const n of sizes) {
      const path = join(dir, `pubmed-${n}.xml`);
      await writePubmedFile(path, n);
      const mb = statSync(path).size / 2 ** 20;
      const sax = await inChild('sax', path);
      const reader = await inChild('reader', path);
      rmSync(path);
      if (reader.records !== n || sax.records !== n)
        throw new Error(`read ${reader.records} / ${sax.records} of ${n} records`);
      results.push({ n, reader, sax });
      lines.push(
        ratioLine(
          `medline reader, ${fmt(n)} records (${mb.toFixed(0)} MB)`,
          n / reader.seconds,
          'saxes alone',
          n / sax.seconds,
          'records/s',
        ),
        `  ${(mb / reader.seconds).toFixed(1)} MB/s vs ${(mb / sax.seconds).toFixed(1)} MB/s; peak RSS ${reader.maxRssMB.toFixed(0)} MB (saxes alone ${sax.maxRssMB.toFixed(0)} MB), peak heap ${reader.heapPeakMB.toFixed(0)} MB, retained after GC ${reader.retainedMB.toFixed(1)} MB`,
      );
    }
    const small = results[0];
    const large = results[results.length - 1];
    if (small && large && large !== small) {
      const rss = large.reader.maxRssMB - small.reader.maxRssMB;
      const kept = large.reader.retainedMB - small.reader.retainedMB;
      const signed = (x: number, digits: number) => `${x >= 0 ? '+' : ''}${x.toFixed(digits)}`;
      const flat = Math.abs(rss) < 0.25 * small.reader.maxRssMB && kept < 0.25 * small.reader.retainedMB + 2;
      lines.push(
        `memory from ${fmt(small.n)} to ${fmt(large.n)} records (${(large.n / small.n).toFixed(0)}x the bytes): peak RSS ${signed(rss, 0)} MB, retained heap ${signed(kept, 1)} MB (${flat ? 'flat' : 'GROWS'})`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return lines;
}

const childArgs = process.env[CHILD];
if (childArgs) {
  const { mode, path } = JSON.parse(childArgs) as { mode: 'reader' | 'sax'; path: string };
  const m = mode === 'reader' ? await measureReader(path) : await measureSax(path);
  process.stdout.write(JSON.stringify(m));
}
