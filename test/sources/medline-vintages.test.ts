import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readMedline } from '../../sources/medline.js';
import { detectFormat, readPath } from '../../sources/read.js';
import { collect, fixture, scratchDir } from './helpers/collect.js';
import { pubmedRecord } from './helpers/medline-gen.js';

/**
 * PubMed and MEDLINE records are found by their element wherever they sit: a set, a wrapper an
 * export put around the set, a bare record at the root; pre-2017 MedlineCitationSet files with
 * their older DTD read as well as today's. A file is one dead letter only when it holds no record.
 */
const scratch = scratchDir();
afterAll(scratch.cleanup);

function write(name: string, content: string): string {
  const p = join(scratch.dir, name);
  writeFileSync(p, content);
  return p;
}

describe('a PubMed export wrapped in another root element', async () => {
  const path = fixture('medline/wrapped-export.xml');
  const { articles, deadLetters, positions } = await collect(readPath(path));

  it('is detected as MEDLINE and every record in it is read, books included', async () => {
    expect(await detectFormat(path)).toBe('medline');
    expect(deadLetters).toEqual([]);
    expect(articles.map((a) => a.id)).toEqual(['doi:10.5555/tje.2019.7', 'pmid:31000002', 'pmid:31000003']);
    expect(positions).toEqual(['record 1, line 6', 'record 2, line 32', 'record 3, line 44']);
  });

  it('keeps MeSH descriptor and qualifier UIs', () => {
    expect(articles[0]!.mesh).toEqual([
      {
        descriptorUi: 'D016263',
        name: 'Tardigrada',
        majorTopic: true,
        qualifiers: [{ ui: 'Q000502', name: 'physiology', majorTopic: true }],
      },
      { descriptorUi: 'D003890', name: 'Desiccation', majorTopic: false, qualifiers: [] },
    ]);
  });

  it('reads the PubmedBookArticle from its BookDocument', () => {
    expect(articles[2]).toMatchObject({
      pmid: '31000003',
      title: 'Water bears',
      abstract: 'Tardigrades are micro-animals found in mosses.',
      journal: 'Handbook of extremophile biology',
      published: '2018-06',
    });
  });
});

describe('records under any root', () => {
  it('bare PubmedArticle records under a made-up root, and a lone MedlineCitation at the root', async () => {
    const wrapped = write(
      'export.xml',
      `<?xml version="1.0"?>\n<Root>\n${pubmedRecord(1)}${pubmedRecord(2)}</Root>\n`,
    );
    expect(await detectFormat(wrapped)).toBe('medline');
    const a = await collect(readPath(wrapped));
    expect(a.deadLetters).toEqual([]);
    expect(a.articles.map((x) => x.pmid)).toEqual(['20000001', '20000002']);
    expect(a.articles[0]!.mesh.map((m) => m.descriptorUi)).toEqual(['D056186', 'D012988']);

    const citation = /<MedlineCitation[\s\S]*<\/MedlineCitation>/.exec(pubmedRecord(3))![0];
    const lone = write('lone.xml', `<?xml version="1.0"?>\n${citation}\n`);
    expect(await detectFormat(lone)).toBe('medline');
    const b = await collect(readPath(lone));
    expect(b.deadLetters).toEqual([]);
    expect(b.articles.map((x) => x.pmid)).toEqual(['20000003']);
  });

  it('a MedlineCitationSet inside a wrapper, several levels down', async () => {
    const citation = /<MedlineCitation[\s\S]*<\/MedlineCitation>/.exec(pubmedRecord(4))![0];
    const path = write('deep.xml', `<A><B><MedlineCitationSet>${citation}</MedlineCitationSet></B></A>`);
    const { articles, deadLetters } = await collect(readPath(path));
    expect(deadLetters).toEqual([]);
    expect(articles.map((x) => x.pmid)).toEqual(['20000004']);
  });
});

describe('a MedlineCitationSet with the older DTD (pre-2017 baseline files)', async () => {
  const path = fixture('medline/medline-1998.xml');
  const { articles, deadLetters, positions } = await collect(readPath(path));
  const [wheat, seeds, letter] = articles;

  it('reads every citation (DateCreated, no ArticleIdList, PMID only), skipping the deletion', () => {
    expect(deadLetters).toEqual([]);
    expect(articles.map((a) => a.id)).toEqual(['pmid:9850001', 'pmid:9850002', 'pmid:9850003']);
    expect(positions).toEqual(['record 1, line 4', 'record 2, line 31', 'record 4, line 46']);
  });

  it('reads an unlabelled AbstractText, a MedlineDate range by its start, and PublicationType straight under Article', () => {
    expect(wheat).toMatchObject({
      title: 'Photoperiod controls flowering of winter wheat.',
      abstract: 'Winter wheat flowered 12 days earlier under long days & vernalisation.',
      published: '1998-12',
      journal: 'Test Plant Sci',
      publicationTypes: ['Journal Article'],
    });
    expect(letter!.published).toBe('1998-11-15');
  });

  it('keeps the UIs that are there and null where the old file has none; <SubHeading> is a qualifier', () => {
    expect(wheat!.mesh).toEqual([
      {
        descriptorUi: 'D014908',
        name: 'Triticum',
        majorTopic: true,
        qualifiers: [{ ui: null, name: 'growth & development', majorTopic: true }],
      },
      { descriptorUi: null, name: 'Photoperiod', majorTopic: true, qualifiers: [] },
    ]);
    expect(letter!.mesh).toEqual([
      { descriptorUi: 'D000074342', name: 'Pollination', majorTopic: true, qualifiers: [] },
    ]);
  });

  it('takes the English OtherAbstract when the article has no abstract of its own', () => {
    expect(seeds!.abstract).toBe('Seed banks persist for decades in arid grassland soil.');
    expect(seeds!.mesh[0]!.descriptorUi).toBe('D012639');
  });
});

describe('a file with no record element', () => {
  it('is one dead letter, from detection and from the reader alike', async () => {
    const path = write('summary.xml', '<?xml version="1.0"?>\n<MyExport><Summary count="0"/></MyExport>\n');
    const viaPath = await collect(readPath(path));
    expect(viaPath.articles).toEqual([]);
    expect(viaPath.deadLetters).toHaveLength(1);
    expect(viaPath.deadLetters[0]!.reason).toMatch(
      /no <article>, <PubmedArticle>.* under the root <MyExport>/,
    );

    const direct = await collect(readMedline(path));
    expect(direct.items).toHaveLength(1);
    expect(direct.deadLetters[0]).toMatchObject({
      reason:
        'no record element (<PubmedArticle>, <PubmedBookArticle>, <MedlineCitation>, <DeleteCitation>, <DeleteDocument>) under the root <MyExport>',
      origin: { kind: 'file', path, position: null },
    });
  });

  it('an empty PubmedArticleSet is one dead letter; an update file of deletions only is none', async () => {
    const empty = await collect(
      readPath(write('empty-set.xml', '<PubmedArticleSet>\n</PubmedArticleSet>\n')),
    );
    expect(empty.items).toHaveLength(1);
    expect(empty.deadLetters[0]!.reason).toMatch(/^no record element .* under the root <PubmedArticleSet>$/);

    const deletions = write(
      'deletions.xml',
      '<PubmedArticleSet><DeleteCitation><PMID Version="1">1</PMID><PMID Version="1">2</PMID></DeleteCitation></PubmedArticleSet>',
    );
    expect((await collect(readPath(deletions))).items).toEqual([]);
  });
});

describe('deep nesting in a MEDLINE abstract', () => {
  it('10,000 nested elements in an AbstractText read without a crash, the text kept', async () => {
    const n = 10_000;
    const deep = `${'<i>'.repeat(n)}deeply nested finding${'</i>'.repeat(n)}`;
    const record = pubmedRecord(9).replace(/<AbstractText Label="BACKGROUND">/, `$&${deep} `);
    const path = write('deep-abstract.xml', `<PubmedArticleSet>${record}</PubmedArticleSet>`);
    const { articles, deadLetters } = await collect(readPath(path));
    expect(deadLetters).toEqual([]);
    expect(articles[0]!.abstract).toMatch(/^BACKGROUND: deeply nested finding Gene 9 is expressed/);
  });
});
