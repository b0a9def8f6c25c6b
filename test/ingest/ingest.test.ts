import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { expandPaths, ingestFile, ingestProcessor } from '../../processors/ingest.js';
import { pipelineTopology } from '../../processors/pipeline.js';
import type { Article } from '../../schemas/index.js';
import { EngineMetrics } from '../../topology/metrics.js';
import { EmbeddedRuntime } from '../../topology/runtime/embedded.js';
import { ProcessorTask } from '../../topology/task.js';
import { readAll } from '../conformance/suite.js';
import { PUBMED_HEAD, PUBMED_TAIL, pubmedRecord, writePubmedFile } from '../sources/helpers/medline-gen.js';

const BIN = new URL('../../bin/bioalchemy.js', import.meta.url).pathname;
const FIXTURES = new URL('../fixtures/sources/', import.meta.url).pathname;

const jatsWithDoi = (doi: string) => `<?xml version="1.0"?>
<article article-type="research-article"><front><journal-meta><journal-title-group><journal-title>J Test</journal-title></journal-title-group></journal-meta>
<article-meta><article-id pub-id-type="doi">${doi}</article-id><title-group><article-title>Full text of record 1</article-title></title-group>
<pub-date pub-type="epub"><day>2</day><month>3</month><year>2021</year></pub-date>
<permissions><license><license-p>CC BY 4.0</license-p></license></permissions>
<abstract><p>Gene 1 is expressed in one tissue.</p></abstract></article-meta></front>
<body><sec><title>Results</title><p>Knockout reduced growth by two percent in every replicate we ran.</p></sec></body></article>`;

async function ingestTask() {
  const runtime = EmbeddedRuntime.open(':memory:');
  const topology = pipelineTopology();
  await runtime.ensureTopics(topology.topics);
  const task = await new ProcessorTask(runtime, topology, ingestProcessor, {
    log: pino({ level: 'silent' }),
    metrics: new EngineMetrics(),
  }).open();
  return { runtime, task };
}

describe('ingest', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ingest-'));
  const children: ReturnType<typeof spawn>[] = [];
  afterEach(() => {
    for (const c of children.splice(0)) c.kill('SIGKILL');
  });

  it('merges one article arriving from two sources into one id, keeping MeSH and full text', async () => {
    const medline = join(dir, 'one.xml');
    writeFileSync(medline, PUBMED_HEAD + pubmedRecord(1) + PUBMED_TAIL);
    const jats = join(dir, 'one.nxml');
    writeFileSync(jats, jatsWithDoi('10.5555/synthetic.1'));
    const { runtime, task } = await ingestTask();
    const first = await ingestFile(task, medline);
    const second = await ingestFile(task, jats);
    const again = await ingestFile(task, jats);
    expect(first.counts).toMatchObject({ articles: 1, updated: 0 });
    expect(second.counts).toMatchObject({ articles: 0, updated: 1 });
    expect(again.status).toBe('unchanged');
    const articles = (await readAll(runtime, 'articles')).map((r) => r.value as Article);
    expect(articles.map((a) => a.id)).toEqual(['doi:10.5555/synthetic.1', 'doi:10.5555/synthetic.1']);
    const merged = articles[1]!;
    expect(merged.sections.map((s) => s.heading)).toEqual(['Results']);
    expect(merged.mesh.map((m) => m.descriptorUi)).toEqual(['D056186', 'D012988']);
    expect(merged.pmid).toBe('20000001');
    expect(merged.source).toBe('jats+medline');
    await task.close();
    await runtime.close();
  });

  it('counts a copy that adds nothing as a duplicate and emits nothing for it', async () => {
    const a = join(dir, 'a.xml');
    const b = join(dir, 'b.xml');
    writeFileSync(a, PUBMED_HEAD + pubmedRecord(7) + PUBMED_TAIL);
    writeFileSync(b, PUBMED_HEAD + pubmedRecord(7) + PUBMED_TAIL);
    const { runtime, task } = await ingestTask();
    await ingestFile(task, a);
    expect((await ingestFile(task, b)).counts).toMatchObject({ articles: 0, updated: 0, duplicates: 1 });
    expect(await readAll(runtime, 'articles')).toHaveLength(1);
    await runtime.close();
  });

  it('expands folders and globs', async () => {
    const all = await expandPaths([FIXTURES]);
    expect(all.length).toBeGreaterThanOrEqual(10);
    const xml = await expandPaths([join(FIXTURES, '**/*.xml')]);
    expect(xml.every((f) => f.endsWith('.xml'))).toBe(true);
    // The .xml fixtures: articleset and plos-formulas (jats), four MEDLINE files.
    expect(xml.map((f) => f.slice(FIXTURES.length).replace(/^\//, '')).sort()).toEqual([
      'jats/articleset.xml',
      'jats/plos-formulas.xml',
      'medline/medline-1998.xml',
      'medline/medline-citation-set.xml',
      'medline/pubmed-sample.xml',
      'medline/wrapped-export.xml',
    ]);
    expect(await expandPaths([join(FIXTURES, 'text/*.md')])).toHaveLength(2);
  });

  it('resumes inside a file after kill -9, with every article exactly once', async () => {
    const data = join(dir, 'kill-data');
    const big = join(dir, 'big.xml.gz');
    const total = 6_000;
    await writePubmedFile(big, total);
    const seenAtKill: number[] = [];
    for (let kill = 0; kill < 3; kill++) {
      const child = spawn(process.execPath, [BIN, 'ingest', big, '--data', data], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      children.push(child);
      const exited = new Promise((resolve) => child.on('exit', resolve));
      // Kill once the first chunks are committed: the log starts holding articles.
      for (let seen = 0; seen < (kill + 1) * 400; ) {
        await new Promise((r) => setTimeout(r, 50));
        const runtime = EmbeddedRuntime.open(data);
        try {
          seen = (await runtime.endOffsets('articles').catch(() => [0])).reduce((x, y) => x + y, 0);
        } finally {
          await runtime.close();
        }
        if (seen >= total) break;
      }
      child.kill('SIGKILL');
      await exited;
      const runtime = EmbeddedRuntime.open(data);
      seenAtKill.push((await runtime.endOffsets('articles')).reduce((x, y) => x + y, 0));
      await runtime.close();
    }
    // The kills landed mid-file, not after the ingest had finished.
    expect(seenAtKill[0]).toBeLessThan(total);
    const final = spawnSync(process.execPath, [BIN, 'ingest', big, '--data', data], { encoding: 'utf8' });
    expect(final.status).toBe(0);
    const runtime = EmbeddedRuntime.open(data);
    const ids = (await readAll(runtime, 'articles')).map((r) => (r.value as Article).id);
    await runtime.close();
    expect(ids).toHaveLength(total);
    expect(new Set(ids).size).toBe(total);
  }, 180_000);

  it('watches a folder: a file is read once, when complete, and not again after a restart', async () => {
    const data = join(dir, 'watch-data');
    const inbox = join(dir, 'inbox');
    spawnSync('mkdir', ['-p', inbox]);
    const watch = () => {
      const child = spawn(process.execPath, [BIN, 'ingest', '--watch', inbox, '--data', data], {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, BIOALCHEMY_LOG_LEVEL: 'info' },
      });
      children.push(child);
      let log = '';
      child.stderr!.on('data', (c: Buffer) => {
        log += c.toString();
      });
      return { child, log: () => log };
    };
    const articles = async () => {
      const runtime = EmbeddedRuntime.open(data);
      try {
        return (await runtime.endOffsets('articles').catch(() => [0])).reduce((x, y) => x + y, 0);
      } finally {
        await runtime.close();
      }
    };
    const until = async (check: () => Promise<boolean> | boolean, what: string) => {
      const deadline = Date.now() + 30_000;
      while (!(await check())) {
        if (Date.now() > deadline) throw new Error(`${what}: not within 30 s`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };

    const first = watch();
    await until(() => first.log().includes('"msg":"watching"'), 'watcher started');
    const file = join(inbox, 'arriving.xml');
    // A half-written file: the watcher must wait for it to be complete.
    writeFileSync(file, PUBMED_HEAD + pubmedRecord(1));
    await new Promise((r) => setTimeout(r, 300));
    appendFileSync(file, pubmedRecord(2) + pubmedRecord(3) + PUBMED_TAIL);
    await until(async () => (await articles()) === 3, 'three articles from the completed file');
    // The summary line follows the commit that made the articles visible.
    await until(
      () => first.log().includes('"articles":3,"updated":0,"duplicates":0,"deadLetters":0'),
      'the file summarised once',
    );
    first.child.kill('SIGINT');
    await new Promise((resolve) => first.child.on('exit', resolve));

    const second = watch();
    await until(() => second.log().includes('"msg":"watching"'), 'watcher restarted');
    writeFileSync(join(inbox, 'later.xml'), PUBMED_HEAD + pubmedRecord(4) + PUBMED_TAIL);
    await until(async () => (await articles()) === 4, 'only the new file ingested after the restart');
    second.child.kill('SIGINT');
    await new Promise((resolve) => second.child.on('exit', resolve));
    expect(await articles()).toBe(4);
  }, 90_000);
});
