import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ingestFile, ingestProcessor } from '../../processors/ingest.js';
import { pipelineTopology } from '../../processors/pipeline.js';
import { isHeldOut } from '../../processors/sampler/selection.js';
import type { Article } from '../../schemas/index.js';
import { articleIdOf, unversioned } from '../../sources/works.js';
import { EngineMetrics } from '../../topology/metrics.js';
import { EmbeddedRuntime } from '../../topology/runtime/embedded.js';
import { ProcessorTask } from '../../topology/task.js';
import { readAll } from '../conformance/suite.js';

const dir = mkdtempSync(join(tmpdir(), 'works-'));

/** A made-up abstract of about 90 words, its own for each seed: no two seeds share a sentence. */
function abstractOf(seed: number): string {
  const nouns = [
    'kinase',
    'receptor',
    'operon',
    'chaperone',
    'ligase',
    'transporter',
    'promoter',
    'repressor',
  ];
  const tissues = ['liver', 'root', 'gill', 'retina', 'xylem', 'spleen', 'biofilm', 'oocyte'];
  const sentence = (i: number) => {
    const n = nouns[(seed * 3 + i) % nouns.length]!;
    const t = tissues[(seed * 5 + i * 7) % tissues.length]!;
    return `In study ${seed} part ${i}, the ${n} of the ${t} changed expression ${i + 2} fold after heat stress in strain S${seed}${i}.`;
  };
  return Array.from({ length: 5 }, (_, i) => sentence(i)).join(' ');
}

interface Line {
  title: string;
  abstract: string;
  pmid?: string;
  doi?: string;
  published?: string;
  related_ids?: string[];
}

async function ingest(records: Line[][]) {
  const runtime = EmbeddedRuntime.open(':memory:');
  const topology = pipelineTopology();
  await runtime.ensureTopics(topology.topics);
  const warnings: string[] = [];
  const log = pino({ level: 'warn' }, { write: (line: string) => warnings.push(line) });
  const task = await new ProcessorTask(runtime, topology, ingestProcessor, {
    log,
    metrics: new EngineMetrics(),
  }).open();
  const counts = [];
  for (const [i, file] of records.entries()) {
    const path = join(dir, `batch-${Math.random().toString(36).slice(2)}-${i}.jsonl`);
    writeFileSync(path, `${file.map((r) => JSON.stringify(r)).join('\n')}\n`);
    counts.push((await ingestFile(task, path)).counts);
  }
  const articles = (await readAll(runtime, 'articles')).map((r) => r.value as Article);
  await task.close();
  await runtime.close();
  const latest = new Map<string, Article>();
  for (const a of articles) latest.set(a.id, a);
  return { articles, works: [...latest.values()], counts, warnings };
}

const copy = (n: number, abstract: string): Line => ({
  title: `Copy ${n}: a title of its own`,
  abstract,
  pmid: String(30_000_000 + n),
});

/** The same work as a preprint and as its journal version: two DOIs, one sentence reworded. */
const preprint = (seed: number, related = false): Line => ({
  title: `Preprint ${seed}`,
  abstract: abstractOf(seed),
  doi: `10.1101/2024.01.${seed}.0001`,
  published: '2024-01-10',
  ...(related ? { related_ids: [`10.7554/eLife.${90_000 + seed}`] } : {}),
});
const published = (seed: number): Line => ({
  title: `Published ${seed}`,
  abstract: abstractOf(seed).replace(`In study ${seed} part 2,`, `In the second part of study ${seed},`),
  doi: `10.7554/eLife.${90_000 + seed}`,
  published: '2024-09-01',
});

describe('one work, many records (ingest)', () => {
  it('links eight copies of one abstract under eight PMIDs and titles into one work, keeping every id', async () => {
    const abstract = abstractOf(1);
    const { works, counts } = await ingest([Array.from({ length: 8 }, (_, i) => copy(i, abstract))]);
    expect(works).toHaveLength(1);
    expect(counts[0]).toMatchObject({ articles: 1, updated: 7, duplicates: 0 });
    const work = works[0]!;
    expect(work.id).toBe('pmid:30000000');
    expect(work.records.map((r) => [r.id, r.link])).toEqual([
      ['pmid:30000000', 'first'],
      ...Array.from({ length: 7 }, (_, i) => [`pmid:${30_000_001 + i}`, 'text']),
    ]);
    // Each update carries the text extract already had: it makes no question again.
    expect(work.textSentBefore.length).toBeGreaterThan(0);
  });

  it('links a preprint and its published version by their near-identical abstracts; the later text wins', async () => {
    const { works } = await ingest([[preprint(2)], [published(2)]]);
    expect(works).toHaveLength(1);
    expect(works[0]!.id).toBe('doi:10.1101/2024.01.2.0001');
    expect(works[0]!.records.map((r) => r.link)).toEqual(['first', 'near-text']);
    expect(works[0]!.abstract).toContain('In the second part of study 2,');
    expect(works[0]!.published).toBe('2024-09-01');
  });

  it('links by a declared relation whichever record comes first; the first keeps its own identity', async () => {
    // Abstracts unlike each other: only the relation can link them.
    const pre = { ...preprint(3, true), abstract: abstractOf(3) };
    const pub = { ...published(3), abstract: abstractOf(4) };
    for (const order of [
      [pre, pub],
      [pub, pre],
    ]) {
      const { works } = await ingest(order.map((r) => [r]));
      expect(works).toHaveLength(1);
      expect(works[0]!.id).toBe(`doi:${order[0]!.doi!.toLowerCase()}`);
      expect(works[0]!.records.map((r) => r.link)).toEqual(['first', 'relation']);
    }
  });

  it('folds DOI versions into one work, and keeps works with short or different abstracts apart', async () => {
    const { works } = await ingest([
      [
        { title: 'v1', abstract: abstractOf(5), doi: '10.1101/2024.02.01.555v1' },
        { title: 'v2', abstract: abstractOf(6), doi: '10.1101/2024.02.01.555v2' },
        { title: 'A', abstract: 'No abstract available.', pmid: '1' },
        { title: 'B', abstract: 'No abstract available.', pmid: '2' },
        { title: 'C', abstract: abstractOf(7), pmid: '3' },
      ],
    ]);
    expect(works.map((w) => w.id).sort()).toEqual([
      'doi:10.1101/2024.02.01.555v1',
      'pmid:1',
      'pmid:2',
      'pmid:3',
    ]);
  });

  it('logs a record that names two works with both ids, and merges neither into the other', async () => {
    const { works, warnings } = await ingest([
      [{ title: 'A', abstract: abstractOf(8), doi: '10.5555/a' }],
      [{ title: 'B', abstract: abstractOf(9), doi: '10.5555/b' }],
      // Its own DOI is work A's; its relation names work B.
      [{ title: 'A again', abstract: abstractOf(8), doi: '10.5555/a', related_ids: ['10.5555/b'] }],
    ]);
    expect(works.map((w) => w.id).sort()).toEqual(['doi:10.5555/a', 'doi:10.5555/b']);
    const warning = warnings.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.other);
    expect(warning).toMatchObject({ work: 'doi:10.5555/a', other: 'doi:10.5555/b', by: 'relation' });
  });

  it('reads ids as written', () => {
    expect(articleIdOf('https://doi.org/10.7554/eLife.43696')).toBe('doi:10.7554/elife.43696');
    expect(articleIdOf('31234567')).toBe('pmid:31234567');
    expect(articleIdOf('pmc12345')).toBe('pmcid:PMC12345');
    expect(articleIdOf('NA')).toBeNull();
    expect(unversioned('doi:10.7554/elife.88888.2')).toBe('doi:10.7554/elife.88888');
    expect(unversioned('doi:10.1101/2024.02.01.555v3')).toBe('doi:10.1101/2024.02.01.555');
    expect(unversioned('doi:10.1000/x.2')).toBe('doi:10.1000/x.2');
  });

  // Whatever order the records of several works arrive in, and in how many files, each work is one.
  it('gives one work per group of records, in any order (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 3, maxLength: 12 }),
        fc.integer({ min: 1, max: 3 }),
        async (picks, files) => {
          // Group g: copies of abstract 20+g, and for g even a preprint/published pair.
          const lines: { group: number; line: Line }[] = picks.map((g, i) => ({
            group: g,
            line:
              g % 2 === 0 && i % 2 === 0
                ? i % 4 === 0
                  ? preprint(20 + g)
                  : published(20 + g)
                : copy(100 * g + i, abstractOf(20 + g)),
          }));
          const batches = Array.from({ length: files }, (_, f) =>
            lines.filter((_, i) => i % files === f).map((l) => l.line),
          ).filter((b) => b.length);
          const { works } = await ingest(batches);
          const groups = new Set(lines.map((l) => l.group));
          expect(works).toHaveLength(groups.size);
        },
      ),
      { numRuns: 15, seed: Number(process.env.FC_SEED ?? 30) },
    );
  });
});

describe('everything counts works', () => {
  it('holds out a work linked from a held-out source, whatever its other sources', () => {
    const heldOut = { sources: ['biorxiv'], topics: [], publishedFrom: null };
    expect(isHeldOut(heldOut, { topics: [], source: 'biorxiv+pubmed', published: null })).toBe(true);
    expect(isHeldOut(heldOut, { topics: [], source: 'jats+medline', published: null })).toBe(false);
  });
});
