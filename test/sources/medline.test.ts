import { createReadStream, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { loadTaxonomy } from '../../schemas/taxonomy.js';
import { readMedline } from '../../sources/medline.js';
import { collect, fixture, inPieces, scratchDir } from './helpers/collect.js';
import { writePubmedFile } from './helpers/medline-gen.js';

const scratch = scratchDir();
afterAll(scratch.cleanup);

describe('MEDLINE reader: a PubmedArticleSet', async () => {
  const path = fixture('medline/pubmed-sample.xml');
  const { articles, deadLetters, positions } = await collect(readMedline(path));
  const [soil, tern, comment, phage] = articles;

  it('yields one article per record with a title or text, one dead letter per record with neither, and skips DeleteCitation', () => {
    expect(articles.map((a) => a.id)).toEqual([
      'doi:10.5555/tmr.2024.0042',
      'doi:10.5555/jtz.1998.45',
      'pmid:10000003',
      'pmid:10000005',
    ]);
    expect(positions).toEqual([
      'record 1, line 4',
      'record 2, line 78',
      'record 3, line 107',
      'record 5, line 125',
    ]);
    expect(deadLetters).toHaveLength(1);
    expect(deadLetters[0]).toMatchObject({
      reason: 'no text',
      processor: 'sources/medline',
      origin: { kind: 'file', path, position: 'record 6, line 140' },
    });
    expect(deadLetters[0]!.payload).toMatch(/^<PubmedArticle>[\s\S]*10000006[\s\S]*<\/PubmedArticle>$/);
  });

  it('keeps a title-only citation (no abstract) as an article with its MeSH headings', () => {
    expect(comment).toMatchObject({
      id: 'pmid:10000003',
      pmid: '10000003',
      doi: null,
      title: 'Comment on nesting terns.',
      abstract: '',
      sections: [],
      captions: [],
      journal: 'Test letters',
      published: '2001', // a Season is no month
      publicationTypes: ['Comment'],
    });
    expect(comment!.mesh).toEqual([
      { descriptorUi: 'D001717', name: 'Birds', majorTopic: true, qualifiers: [] },
      { descriptorUi: 'D015046', name: 'Zoology', majorTopic: false, qualifiers: [] },
    ]);
  });

  it('reads ids (PMID, DOI from ELocationID, PMC from the article ids, never from references)', () => {
    expect(soil).toMatchObject({
      pmid: '39000001',
      doi: '10.5555/tmr.2024.0042',
      pmcid: 'PMC11000001',
      source: 'medline',
      sourceUri: path,
    });
    expect(tern).toMatchObject({ pmid: '10000002', doi: '10.5555/jtz.1998.45', pmcid: null });
  });

  it('reads title, journal, date, keywords and publication types', () => {
    expect(soil).toMatchObject({
      title: 'Drought reshapes the Streptomyces community of grassland soil: a shotgun metagenomics study.',
      journal: 'Test microbiology reports',
      published: '2024-03-14',
      keywords: ['antibiotics', 'drought'],
      publicationTypes: ['Journal Article', "Research Support, Non-U.S. Gov't"],
      licence: null,
      sections: [],
      captions: [],
    });
    expect(tern!.published).toBe('1998-12'); // MedlineDate '1998 Dec-1999 Jan'
    expect(phage!.published).toBe('2022-11');
  });

  it("joins a structured abstract as 'LABEL: text' paragraphs, inline markup as plain text", () => {
    expect(soil!.abstract).toBe(
      'BACKGROUND: Soil bacteria of the genus Streptomyces produce most known antibiotics, yet how drought alters their abundance is unclear.\n\n' +
        'RESULTS: Shotgun sequencing of 48 plots showed a 2.3-fold rise in Streptomyces reads after 60 days without rain (p < 0.01); spore counts exceeded 10^6 per gram.\n\n' +
        'CONCLUSIONS: Dry soils favour antibiotic producers.',
    );
    expect(tern!.abstract).toBe(
      'Terns (Sterna hirundo) nesting on gravel islands laid 2.9 eggs per clutch; hatching success fell when Ca2+ in prey was low.',
    );
    expect(phage!.abstract).toBe(
      'Radioactive labelling with 32P remains the most sensitive way to follow phage DNA.',
    );
  });

  it('reads MeSH headings with descriptor UIs, qualifiers and major-topic flags', () => {
    expect(soil!.mesh).toEqual([
      { descriptorUi: 'D012987', name: 'Soil', majorTopic: false, qualifiers: [] },
      { descriptorUi: 'D012988', name: 'Soil Microbiology', majorTopic: true, qualifiers: [] },
      // starred qualifier makes the heading a major topic, as PubMed's [MAJR] reads it
      {
        descriptorUi: 'D056186',
        name: 'Metagenomics',
        majorTopic: true,
        qualifiers: [{ ui: 'Q000379', name: 'methods', majorTopic: true }],
      },
      {
        descriptorUi: 'D013302',
        name: 'Streptomyces',
        majorTopic: false,
        qualifiers: [
          { ui: 'Q000235', name: 'genetics', majorTopic: false },
          { ui: 'Q000302', name: 'isolation & purification', majorTopic: false },
        ],
      },
      { descriptorUi: 'D055864', name: 'Droughts', majorTopic: false, qualifiers: [] },
    ]);
  });

  it('maps MeSH headings to MeSH Biology categories through the taxonomy', () => {
    const taxonomy = loadTaxonomy();
    const categories = (ids: (string | null)[]) =>
      [...new Set(ids.flatMap((ui) => (ui ? taxonomy.categoriesOf(ui) : [])))].sort();
    expect(taxonomy.categoriesOf('D056186')).toEqual(['genetics']); // Metagenomics: H01.158.273.343.350.261
    expect(taxonomy.categoriesOf('D012988')).toEqual(['microbiology']); // Soil Microbiology: H01.158.273.540.274.555
    expect(taxonomy.categoriesOf('D012987')).toEqual([]); // Soil: not biology
    expect(categories(soil!.mesh.map((h) => h.descriptorUi))).toEqual(['genetics', 'microbiology']);
    expect(categories(tern!.mesh.map((h) => h.descriptorUi))).toEqual(['zoology']);
    expect(categories(comment!.mesh.map((h) => h.descriptorUi))).toEqual(['zoology']); // title only, still counted
    expect(categories(phage!.mesh.map((h) => h.descriptorUi))).toEqual(['microbiology']); // Virology
  });

  it('reads the same from a Readable, from small pieces, and from gzip', async () => {
    const bytes = readFileSync(path);
    const fromStream = await collect(readMedline(createReadStream(path), { path }));
    const fromPieces = await collect(readMedline(inPieces(bytes, 5), { path }));
    const gz = join(scratch.dir, 'pubmed-sample.xml.gz');
    writeFileSync(gz, gzipSync(bytes));
    const fromGzip = await collect(readMedline(gz, { path }));
    expect(fromStream.items).toEqual((await collect(readMedline(path))).items);
    expect(fromPieces.items).toEqual(fromStream.items);
    expect(fromGzip.items).toEqual(fromStream.items);
  });
});

describe('MEDLINE reader: a MedlineCitationSet in ISO-8859-1', () => {
  it('honours the declared encoding and reads a heading without a UI', async () => {
    const { articles, deadLetters } = await collect(readMedline(fixture('medline/medline-citation-set.xml')));
    expect(deadLetters).toEqual([]);
    expect(articles).toHaveLength(1);
    expect(articles[0]).toMatchObject({
      id: 'pmid:9000001',
      abstract: 'Root hairs of Arabidopsis elongate at 1 µm per minute.',
      published: '1996-08',
      mesh: [{ descriptorUi: null, name: 'Botany', majorTopic: true, qualifiers: [] }],
    });
    expect(loadTaxonomy().categoriesOf('Botany')).toEqual(['botany']);
  });
});

describe('MEDLINE reader: other record kinds', () => {
  async function* text(s: string): AsyncGenerator<Uint8Array> {
    yield Buffer.from(s);
  }

  it('reads a PubmedBookArticle, and keeps an entity the file never defined as text', async () => {
    const xml = `<PubmedArticleSet><PubmedBookArticle><BookDocument><PMID Version="1">20301295</PMID>
      <ArticleIdList><ArticleId IdType="bookaccession">NBK1116</ArticleId></ArticleIdList>
      <Book><BookTitle book="gene">GeneReviews&reg;</BookTitle><PubDate><Year>1993</Year></PubDate></Book>
      <ArticleTitle>Cystic fibrosis &nbsp;&unknownentity;</ArticleTitle>
      <Abstract><AbstractText Label="CLINICAL CHARACTERISTICS">Cystic fibrosis affects the lungs and pancreas.</AbstractText></Abstract>
      </BookDocument><PubmedBookData><ArticleIdList><ArticleId IdType="pubmed">20301295</ArticleId></ArticleIdList></PubmedBookData>
      </PubmedBookArticle></PubmedArticleSet>`;
    const { articles, deadLetters } = await collect(readMedline(text(xml), { path: 'books.xml' }));
    expect(deadLetters).toEqual([]);
    expect(articles[0]).toMatchObject({
      id: 'pmid:20301295',
      title: 'Cystic fibrosis &unknownentity;',
      abstract: 'CLINICAL CHARACTERISTICS: Cystic fibrosis affects the lungs and pancreas.',
      journal: 'GeneReviews®',
      published: '1993',
      sourceUri: 'books.xml',
    });
  });
});

describe('MEDLINE reader: a large gzipped file, streamed', () => {
  it('reads all 20,000 records of a generated .xml.gz', async () => {
    const path = join(scratch.dir, 'pubmed-large.xml.gz');
    const n = await writePubmedFile(path, 20_000);
    expect(statSync(path).size).toBeGreaterThan(100_000);
    let count = 0;
    let dead = 0;
    let last = '';
    for await (const item of readMedline(path)) {
      if (item.kind === 'article') {
        count++;
        last = item.article.id;
      } else dead++;
    }
    expect(dead).toBe(0);
    expect(count).toBe(n);
    expect(last).toBe('doi:10.5555/synthetic.20000');
  });
});
