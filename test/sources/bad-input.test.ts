import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { type DeadLetter, deadLetterCodeOf } from '../../schemas/dead-letter.js';
import { readPath } from '../../sources/read.js';
import { collect, fixture, scratchDir } from './helpers/collect.js';
import { makePdf } from './helpers/make-pdf.js';
import { PUBMED_HEAD, PUBMED_TAIL, pubmedRecord } from './helpers/medline-gen.js';

/**
 * Every kind of bad input gives exactly one dead letter naming the file, a position and the
 * reason, after every article that came before the fault in the same file. Nothing throws.
 */
const scratch = scratchDir();
afterAll(scratch.cleanup);

function write(name: string, content: string | Buffer): string {
  const p = join(scratch.dir, name);
  writeFileSync(p, content);
  return p;
}

const records = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => pubmedRecord(from + i)).join('');

function expectOne(deadLetters: DeadLetter[], path: string, reason: RegExp, position: RegExp | null) {
  expect(deadLetters).toHaveLength(1);
  const dl = deadLetters[0]!;
  expect(dl.reason).toMatch(reason);
  // The reader's code is the one an old dead letter with this reason is read with (migration).
  expect(dl.code, dl.reason).toBe(deadLetterCodeOf(dl.reason));
  expect(dl.origin).toMatchObject({ kind: 'file', path });
  if (dl.origin.kind !== 'file') throw new Error('unreachable');
  if (position) expect(dl.origin.position).toMatch(position);
  else expect(dl.origin.position).toBeNull();
  expect(dl.id).toMatch(/^[0-9a-f]{32}$/);
  expect(Buffer.byteLength(dl.payload)).toBeLessThanOrEqual(64 * 1024);
}

describe('malformed XML', () => {
  it('MEDLINE: the records before the fault, then one dead letter with line, column and last record', async () => {
    const broken = `${PUBMED_HEAD}${records(1, 3)}<PubmedArticle><MedlineCitation><PMID>9</PMID></Article>\n${records(4, 5)}${PUBMED_TAIL}`;
    const path = write('broken.xml', broken);
    const { articles, deadLetters } = await collect(readPath(path));
    expect(articles.map((a) => a.pmid)).toEqual(['20000001', '20000002', '20000003']);
    expectOne(deadLetters, path, /^malformed XML: /, /^line 7, column \d+ \(after record 3\)$/);
  });

  it('JATS: a file cut off in the middle is one dead letter', async () => {
    const text = readFileSync(fixture('jats/soil-metagenome.nxml'), 'utf8');
    const path = write('cut.nxml', text.slice(0, Math.floor(text.length / 2)));
    const { articles, deadLetters } = await collect(readPath(path));
    expect(articles).toEqual([]);
    expectOne(deadLetters, path, /^malformed XML: /, /^line \d+, column \d+ \(before the first record\)$/);
  });

  it('an XML file that is neither JATS nor MEDLINE is one dead letter', async () => {
    const path = write('feed.xml', '<?xml version="1.0"?>\n<rss><channel/></rss>\n');
    const { items, deadLetters } = await collect(readPath(path));
    expect(items).toHaveLength(1);
    expectOne(
      deadLetters,
      path,
      /^neither JATS nor PubMed\/MEDLINE XML: no <article>.* under the root <rss>$/,
      null,
    );
  });
});

describe('wrong encoding', () => {
  it('invalid UTF-8 inside the third MEDLINE record: two articles, then the byte offset', async () => {
    const head = Buffer.from(PUBMED_HEAD + records(1, 2));
    const bad = Buffer.from(pubmedRecord(3).replace('growth.', 'growth\u0001.'));
    bad[bad.indexOf(0x01)] = 0xff; // a byte that never occurs in UTF-8
    const path = write('bad-utf8.xml', Buffer.concat([head, bad, Buffer.from(records(4, 5) + PUBMED_TAIL)]));
    const { articles, deadLetters } = await collect(readPath(path));
    expect(articles.map((a) => a.pmid)).toEqual(['20000001', '20000002']);
    const at = head.length + bad.indexOf(0xff);
    expectOne(
      deadLetters,
      path,
      /^invalid UTF-8$/,
      new RegExp(`^line \\d+, column \\d+, byte ${at} \\(after record 2\\)$`),
    );
    expect(deadLetters[0]!.payload).toContain('ff');
  });

  it('invalid UTF-8 on line 3 of a JSONL file: lines 1-2 read, then one dead letter', async () => {
    const lines = Buffer.from(
      '{"title":"A","abstract":"one"}\n{"title":"B","abstract":"two"}\n{"title":"C","abstract":"t\u00e9"}\n{"title":"D","abstract":"four"}\n',
    );
    const bad = Buffer.from(lines);
    const e9 = bad.indexOf(Buffer.from('\u00e9'));
    const path = write(
      'bad.jsonl',
      Buffer.concat([bad.subarray(0, e9), Buffer.from([0xc3, 0x28]), bad.subarray(e9 + 2)]),
    );
    const { articles, deadLetters } = await collect(readPath(path));
    expect(articles.map((a) => a.title)).toEqual(['A', 'B']);
    expectOne(deadLetters, path, /^invalid UTF-8$/, new RegExp(`^line 3, byte ${e9}$`));
  });

  it('UTF-16 without a byte order mark is refused (text and XML)', async () => {
    const txt = write('utf16.txt', Buffer.from('Title\n\nSome text.\n', 'utf16le'));
    const xml = write(
      'utf16.xml',
      Buffer.from('<?xml version="1.0" encoding="UTF-16"?><PubmedArticleSet/>', 'utf16le'),
    );
    for (const path of [txt, xml]) {
      const { items, deadLetters } = await collect(readPath(path));
      expect(items).toHaveLength(1);
      expectOne(deadLetters, path, /^unsupported encoding: NUL bytes/, /byte 1/);
    }
  });

  it('UTF-16 with a byte order mark is read', async () => {
    const bom = Buffer.from([0xff, 0xfe]);
    const path = write(
      'utf16-bom.txt',
      Buffer.concat([
        bom,
        Buffer.from('Nematode dauer larvae\n\nDauer larvae survive months without food.\n', 'utf16le'),
      ]),
    );
    const { articles, deadLetters } = await collect(readPath(path));
    expect(deadLetters).toEqual([]);
    expect(articles[0]).toMatchObject({
      title: 'Nematode dauer larvae',
      sections: [{ text: 'Dauer larvae survive months without food.' }],
    });
  });

  it('an encoding the platform does not know is refused', async () => {
    const path = write('ebcdic.xml', '<?xml version="1.0" encoding="X-NO-SUCH-CODEPAGE"?><article/>');
    const { deadLetters } = await collect(readPath(path));
    expectOne(deadLetters, path, /^unsupported encoding: x-no-such-codepage$/, /byte 0/);
  });
});

describe('empty files', () => {
  it('every format: exactly one "empty file" dead letter', async () => {
    const names = [
      'e.xml',
      'e.nxml',
      'e.jsonl',
      'e.txt',
      'e.md',
      'e.pdf',
      'blank.xml',
      'blank.jsonl',
      'blank.txt',
    ];
    const contents: Record<string, string> = {
      'blank.xml': '  \n\n',
      'blank.jsonl': '\n\n\n',
      'blank.txt': '\n \n',
    };
    for (const name of names) {
      const path = write(name, contents[name] ?? '');
      const { items, deadLetters } = await collect(readPath(path));
      expect(items, name).toHaveLength(1);
      expectOne(deadLetters, path, /^empty file$/, null);
    }
    const gz = write('e.xml.gz', gzipSync(Buffer.alloc(0)));
    expectOne((await collect(readPath(gz))).deadLetters, gz, /^empty file$/, null);
  });
});

describe('articles with no text', () => {
  it('a MEDLINE record without abstract is kept for its title and MeSH; one with neither title nor abstract is one "no text" dead letter', async () => {
    const noAbstract = pubmedRecord(3).replace(/<Abstract>[\s\S]*<\/Abstract>/, '');
    // MeSH headings and keywords stay: they are not text, so they do not save the record.
    const noText = pubmedRecord(4)
      .replace(/<Abstract>[\s\S]*<\/Abstract>/, '')
      .replace(/<ArticleTitle>[\s\S]*<\/ArticleTitle>/, '<ArticleTitle/>');
    expect(noText).toContain('<MeshHeadingList>');
    const path = write(
      'noabstract.xml',
      PUBMED_HEAD + records(1, 2) + noAbstract + noText + records(5, 5) + PUBMED_TAIL,
    );
    const { articles, deadLetters } = await collect(readPath(path));
    expect(articles.map((a) => a.pmid)).toEqual(['20000001', '20000002', '20000003', '20000005']);
    expect(articles[2]).toMatchObject({
      title: 'Record 3: effects of gene 3 on growth.',
      abstract: '',
      sections: [],
      keywords: ['growth'],
    });
    expect(articles[2]!.mesh.map((h) => h.descriptorUi)).toEqual(['D056186', 'D012988']);
    expectOne(deadLetters, path, /^no text$/, /^record 4, line 7$/);
    expect(deadLetters[0]!.payload).toContain('<PMID Version="1">20000004</PMID>');
  });

  it('a text file with only a title is an article with no abstract and no sections', async () => {
    const path = write('title-only.txt', 'Just a title\n');
    const { articles, deadLetters } = await collect(readPath(path));
    expect(deadLetters).toEqual([]);
    expect(articles).toHaveLength(1);
    expect(articles[0]).toMatchObject({ source: 'text', title: 'Just a title', abstract: '', sections: [] });
  });

  it('a text or Markdown file with no title and no text at all is one "no text" dead letter', async () => {
    const cases: [string, string][] = [
      ['invisible.txt', '\u200b\u00ad\n\u200b\n'], // zero-width spaces and a soft hyphen: not empty, but no text
      ['front-matter-only.md', '---\ntags: [soil, draft]\ndate: 2024-01-05\n---\n'],
      ['image-only.md', '![Figure 1](figure1.png)\n'],
    ];
    for (const [name, content] of cases) {
      const path = write(name, content);
      const { articles, deadLetters } = await collect(readPath(path));
      expect(articles, name).toEqual([]);
      expectOne(deadLetters, path, /^no text$/, null);
      expect(deadLetters[0]!.processor, name).toBe('sources/text');
    }
  });
});

describe('size limits', () => {
  it('a whole-file format over the limit is refused before reading, gzipped or not', async () => {
    const text = `A long note\n\n${'Mosses dry out and revive. '.repeat(50)}\n`;
    const path = write('big.txt', text);
    expectOne(
      (await collect(readPath(path, { maxBytes: 500 }))).deadLetters,
      path,
      /^over the size limit of 500 bytes/,
      /^byte 500$/,
    );
    const gz = write('big.txt.gz', gzipSync(text));
    expect(readFileSync(gz).length).toBeLessThan(500); // small on disk, large inflated
    expectOne(
      (await collect(readPath(gz, { maxBytes: 500 }))).deadLetters,
      gz,
      /^over the size limit of 500 bytes$/,
      /^byte 500$/,
    );
    const pdf = write(
      'big.pdf',
      makePdf([
        [{ text: 'Title', size: 18 }, ...Array.from({ length: 40 }, () => ({ text: 'Line of body text.' }))],
      ]),
    );
    expectOne(
      (await collect(readPath(pdf, { maxBytes: 500 }))).deadLetters,
      pdf,
      /^over the size limit of 500 bytes/,
      /^byte 500$/,
    );
  });

  it('in a streamed file, only the oversized record is refused', async () => {
    const set = `<pmc-articleset>${['Ants', 'Bees', 'Wasps']
      .map(
        (t, i) =>
          `<article><front><article-meta><title-group><article-title>${t}</article-title></title-group></article-meta></front><body><p>${`${t} live in colonies. `.repeat(i === 1 ? 100 : 2)}</p></body></article>`,
      )
      .join('\n')}</pmc-articleset>`;
    const path = write('set.xml', set);
    const { articles, deadLetters } = await collect(readPath(path, { maxBytes: 1000 }));
    expect(articles.map((a) => a.title)).toEqual(['Ants', 'Wasps']);
    expectOne(
      deadLetters,
      path,
      /^record over the size limit: \d+ characters in <article>$/,
      /^record 2, line 2$/,
    );

    const jsonl = write(
      'lines.jsonl',
      ['A', 'B', 'C']
        .map((t, i) => JSON.stringify({ title: t, abstract: `${t} `.repeat(i === 1 ? 1000 : 3) }))
        .join('\n'),
    );
    const j = await collect(readPath(jsonl, { maxBytes: 1000 }));
    expect(j.articles.map((a) => a.title)).toEqual(['A', 'C']);
    expectOne(j.deadLetters, jsonl, /^line over the size limit: \d+ characters$/, /^line 2$/);
  });

  it('a MEDLINE file far over the limit is streamed whole: the limit is per record', async () => {
    const path = write('many.xml', PUBMED_HEAD + records(1, 50) + PUBMED_TAIL);
    const { articles, deadLetters } = await collect(readPath(path, { maxBytes: 4000 }));
    expect(deadLetters).toEqual([]);
    expect(articles).toHaveLength(50);
  });
});

describe('truncated and corrupt gzip', () => {
  it('MEDLINE .xml.gz cut short: every complete record before the cut, then one dead letter', async () => {
    const full = gzipSync(PUBMED_HEAD + records(1, 400) + PUBMED_TAIL);
    const path = write('cut.xml.gz', full.subarray(0, Math.floor(full.length * 0.6)));
    const { articles, deadLetters } = await collect(readPath(path));
    expect(articles.length).toBeGreaterThan(100);
    expect(articles.length).toBeLessThan(400);
    expect(articles.map((a) => a.pmid)).toEqual(articles.map((_, i) => String(20000001 + i)));
    expectOne(
      deadLetters,
      path,
      /^truncated gzip: unexpected end of file$/,
      new RegExp(`\\(after record ${articles.length}\\)$`),
    );
  });

  it('a truncated .txt.gz and a corrupt .jsonl.gz are one dead letter each', async () => {
    const txt = gzipSync(`Title\n\n${'Lichens are fungi farming algae. '.repeat(200)}`);
    const cut = write('cut.txt.gz', txt.subarray(0, txt.length - 20));
    expectOne((await collect(readPath(cut))).deadLetters, cut, /^truncated gzip/, /^byte \d+$/);
    const corrupt = Buffer.from(gzipSync('{"title":"A","abstract":"x"}\n'.repeat(10)));
    corrupt.fill(0x55, 12, 40);
    const path = write('corrupt.jsonl.gz', corrupt);
    const { deadLetters } = await collect(readPath(path));
    expectOne(deadLetters, path, /gzip/, /^line 1, byte \d+$/);
  });
});

describe('never throws', () => {
  it('cut and corrupted copies of every fixture give valid articles and dead letters only', async () => {
    const { Article } = await import('../../schemas/article.js');
    const { DeadLetter } = await import('../../schemas/dead-letter.js');
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const sources = [
      'jats/soil-metagenome.nxml',
      'jats/articleset.xml',
      'medline/pubmed-sample.xml',
      'jsonl/s2orc.jsonl',
      'jsonl/generic.jsonl',
      'text/circadian.md',
      'pdf/coral-bleaching.pdf',
    ];
    for (const rel of sources) {
      const original = readFileSync(fixture(rel));
      for (let round = 0; round < 12; round++) {
        let bytes = Buffer.from(original.subarray(0, Math.floor(rand() * original.length)));
        if (round % 2 === 1) {
          bytes = Buffer.from(original);
          for (let k = 0; k < 5; k++) bytes[Math.floor(rand() * bytes.length)] = Math.floor(rand() * 256);
        }
        const ext = rel.slice(rel.indexOf('.'));
        const gzipped = round % 4 === 3;
        const path = write(`fuzz-${round}${ext}${gzipped ? '.gz' : ''}`, gzipped ? gzipSync(bytes) : bytes);
        const { items } = await collect(readPath(path));
        for (const item of items) {
          if (item.kind === 'article') Article.parse(item.article);
          else DeadLetter.parse(item.deadLetter);
        }
      }
    }
  });
});
