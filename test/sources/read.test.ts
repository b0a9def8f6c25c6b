import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { detectFormat, readPath } from '../../sources/read.js';
import { collect, fixture, scratchDir } from './helpers/collect.js';

const scratch = scratchDir();
afterAll(scratch.cleanup);

describe('format detection', () => {
  it('goes by extension, looking through .gz, and sniffs XML roots', async () => {
    expect(await detectFormat(fixture('jats/soil-metagenome.nxml'))).toBe('jats');
    expect(await detectFormat(fixture('jats/articleset.xml'))).toBe('jats');
    expect(await detectFormat(fixture('medline/pubmed-sample.xml'))).toBe('medline');
    expect(await detectFormat(fixture('medline/medline-citation-set.xml'))).toBe('medline');
    expect(await detectFormat(fixture('jsonl/s2orc.jsonl'))).toBe('jsonl');
    expect(await detectFormat(fixture('text/tardigrade.txt'))).toBe('text');
    expect(await detectFormat(fixture('text/circadian.md'))).toBe('markdown');
    expect(await detectFormat(fixture('pdf/coral-bleaching.pdf'))).toBe('pdf');
    const gz = join(scratch.dir, 'pubmed.xml.gz');
    writeFileSync(gz, gzipSync(readFileSync(fixture('medline/pubmed-sample.xml'))));
    expect(await detectFormat(gz)).toBe('medline');
  });

  it('sniffs content when the extension says nothing', async () => {
    const cases: [string, string | Buffer, unknown][] = [
      ['paper.bin', readFileSync(fixture('pdf/coral-bleaching.pdf')), 'pdf'],
      ['record', '{"title":"x"}\n', 'jsonl'],
      ['efetch', readFileSync(fixture('medline/pubmed-sample.xml')), 'medline'],
      ['notes.docx', 'PK\u0003\u0004 zip bytes', { unknown: "unknown file type '.docx'" }],
      [
        'odd.xml',
        '<?xml version="1.0"?><!-- c --><html><body/></html>',
        {
          unknown: expect.stringMatching(
            /^neither JATS nor PubMed\/MEDLINE XML: no <article>.* under the root <html>$/,
          ),
        },
      ],
    ];
    for (const [name, content, want] of cases) {
      const p = join(scratch.dir, name);
      writeFileSync(p, content);
      expect(await detectFormat(p)).toEqual(want);
    }
  });
});

describe('readPath', () => {
  it('reads every fixture format through one entry point', async () => {
    const counts: Record<string, [number, number]> = {};
    for (const rel of [
      'jats/soil-metagenome.nxml',
      'jats/articleset.xml',
      'medline/pubmed-sample.xml',
      'medline/medline-citation-set.xml',
      'jsonl/s2orc.jsonl',
      'jsonl/generic.jsonl',
      'text/circadian.md',
      'text/tardigrade.txt',
      'pdf/coral-bleaching.pdf',
    ]) {
      const { articles, deadLetters } = await collect(readPath(fixture(rel)));
      counts[rel] = [articles.length, deadLetters.length];
    }
    expect(counts).toEqual({
      'jats/soil-metagenome.nxml': [1, 0],
      'jats/articleset.xml': [3, 1],
      'medline/pubmed-sample.xml': [4, 1],
      'medline/medline-citation-set.xml': [1, 0],
      'jsonl/s2orc.jsonl': [3, 0],
      'jsonl/generic.jsonl': [4, 3],
      'text/circadian.md': [1, 0],
      'text/tardigrade.txt': [1, 0],
      'pdf/coral-bleaching.pdf': [1, 0],
    });
  });

  it('walks a directory in sorted order, recursing, skipping hidden and unknown files', async () => {
    const dir = join(scratch.dir, 'tree');
    mkdirSync(join(dir, 'b', 'nested'), { recursive: true });
    mkdirSync(join(dir, '.hidden'), { recursive: true });
    copyFileSync(fixture('text/tardigrade.txt'), join(dir, 'b', 'nested', 'z.txt'));
    copyFileSync(fixture('jats/soil-metagenome.nxml'), join(dir, 'a.nxml'));
    writeFileSync(join(dir, 'c.jsonl.gz'), gzipSync(readFileSync(fixture('jsonl/s2orc.jsonl'))));
    copyFileSync(fixture('text/circadian.md'), join(dir, '.hidden', 'x.md'));
    writeFileSync(join(dir, 'image.png'), 'not text');
    const { articles, deadLetters } = await collect(readPath(dir));
    expect(deadLetters).toEqual([]);
    expect(articles.map((a) => a.source)).toEqual(['jats', 'text', 's2orc', 's2orc', 's2orc']);
  });

  it('reports a missing path as one dead letter', async () => {
    const missing = join(scratch.dir, 'nope.xml');
    const { items } = await collect(readPath(missing));
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({
      kind: 'dead-letter',
      deadLetter: {
        reason: expect.stringMatching(/^cannot read: ENOENT/),
        processor: 'sources/read',
        origin: { kind: 'file', path: missing },
      },
    });
  });

  it('passes a JSONL mapping through', async () => {
    const p = join(scratch.dir, 'custom.ndjson');
    writeFileSync(p, '{"headline":"Frogs","summary":"Frogs absorb water through skin."}\n');
    const { articles } = await collect(
      readPath(p, { jsonl: { source: 'frogs', title: 'headline', abstract: 'summary' } }),
    );
    expect(articles[0]).toMatchObject({
      source: 'frogs',
      title: 'Frogs',
      abstract: 'Frogs absorb water through skin.',
    });
  });
});
