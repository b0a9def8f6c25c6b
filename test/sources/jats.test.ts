import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readJats } from '../../sources/jats.js';
import { collect, fixture, inPieces } from './helpers/collect.js';

describe('JATS reader: one full-text article', async () => {
  const path = fixture('jats/soil-metagenome.nxml');
  const { articles, deadLetters, positions } = await collect(readJats(path));
  const a = articles[0]!;

  it('yields one article and no dead letter', () => {
    expect(articles).toHaveLength(1);
    expect(deadLetters).toEqual([]);
    expect(positions).toEqual(['record 1, line 3']);
  });

  it('reads the identifiers from article-id, DOI first for the id', () => {
    expect(a).toMatchObject({
      id: 'doi:10.5555/tmr.2024.0042',
      doi: '10.5555/tmr.2024.0042',
      pmid: '39000001',
      pmcid: 'PMC11000001',
      source: 'jats',
      sourceUri: path,
    });
  });

  it('reads title with subtitle, journal, epub date, licence URL and keywords', () => {
    expect(a.title).toBe(
      'Drought reshapes the Streptomyces community of grassland soil: a shotgun metagenomics study',
    );
    expect(a.journal).toBe('Test Microbiology Reports');
    expect(a.published).toBe('2024-03-14'); // epub preferred over ppub (2024-06-01) and collection (2024)
    expect(a.licence).toBe('https://creativecommons.org/licenses/by/4.0/');
    expect(a.keywords).toEqual(['metagenomics', 'drought', 'Streptomyces']);
    expect(a.mesh).toEqual([]);
  });

  it("reads a structured abstract as 'Label: text' paragraphs", () => {
    expect(a.abstract).toBe(
      'Background: Soil bacteria of the genus Streptomyces produce most known antibiotics, yet how drought alters their abundance is unclear.\n\n' +
        'Results: Shotgun sequencing of 48 plots showed a 2.3-fold rise in Streptomyces reads after 60 days without rain (p < 0.01).',
    );
  });

  it('flattens nested sections into Parent / Child headings, in document order', () => {
    expect(a.sections.map((s) => s.heading)).toEqual([
      'Author summary', // a second, non-blurb abstract is prose worth keeping; the 'toc' blurb is not
      'Introduction',
      'Results / Community composition',
      'Results / Gene content',
      'Discussion',
      'Appendix A',
    ]);
  });

  it('drops numbered citations with their brackets but keeps author-year ones and figure references', () => {
    expect(a.sections[1]!.text).toBe(
      'Drought is the main stress on grassland soils. Earlier surveys relied on 16S rRNA amplicons (Smith et al., 2019), which miss strain-level variation.\n\n' +
        'Calcium (Ca2+) availability also shifts as soils dry, and spore counts can exceed 10^6 per gram (Figure 1).',
    );
  });

  it('renders formulas as TeX (inline $…$) or MathML alttext, and keeps figures out of the text', () => {
    expect(a.sections[2]!.text).toBe(
      'Relative abundance followed $a_i = n_i / N$ for each genus i.\n\n' +
        'Diversity was summarised by the Shannon index,\n\n' +
        'H = -\\sum_i p_i \\ln p_i\n\n' +
        'which fell in droughted plots.',
    );
  });

  it('keeps list items on their own lines and tables out of the text', () => {
    expect(a.sections[3]!.text).toBe(
      'Drought enriched three gene families:\n\npolyketide synthases;\nosmolyte transporters;\nspore coat proteins.',
    );
  });

  it('keeps figure and table captions apart, with their labels', () => {
    expect(a.captions).toEqual([
      {
        kind: 'figure',
        label: 'Figure 1',
        text: 'Streptomyces abundance by treatment. Bars show mean relative abundance; error bars, s.e.m.',
      },
      { kind: 'table', label: 'Table 1', text: 'Gene families enriched under drought.' },
    ]);
  });

  it('leaves out references, acknowledgements, competing interests and sub-articles', () => {
    const all = [a.abstract, ...a.sections.map((s) => `${s.heading} ${s.text}`)].join('\n');
    for (const gone of [
      'Doe J',
      'field station',
      'None declared',
      'reviewers',
      'Decision letter',
      'Drought and soil antibiotics',
    ]) {
      expect(all).not.toContain(gone);
    }
  });

  it('gives the same article when the bytes arrive in 7-byte pieces', async () => {
    const bytes = readFileSync(path);
    const again = await collect(readJats(inPieces(bytes, 7), { path }));
    expect(again.articles).toEqual(articles);
  });
});

describe('JATS reader: a pmc-articleset', async () => {
  const path = fixture('jats/articleset.xml');
  const { articles, deadLetters, positions } = await collect(readJats(path));

  it('yields every article with a title or text and one dead letter for the one with neither', () => {
    expect(articles.map((a) => a.id)).toEqual(['pmid:39000002', 'pmid:39000003', 'doi:10.5555/tcr.2023.7']);
    expect(positions).toEqual(['record 1, line 4', 'record 2, line 26', 'record 3, line 34']);
    expect(deadLetters).toHaveLength(1);
    expect(deadLetters[0]).toMatchObject({
      reason: 'no text',
      processor: 'sources/jats',
      origin: { kind: 'file', path, position: 'record 4, line 44' },
    });
    expect(deadLetters[0]!.payload).toContain('<article-id pub-id-type="pmid">39000004</article-id>');
  });

  it('reads an abstract-only article (publisher withholds the body) with ali:license_ref and a JATS 1.1 pub date', () => {
    expect(articles[0]).toMatchObject({
      pmcid: 'PMC11000002',
      abstract: 'Fibroblasts from older donors divide their mitochondria more often.',
      sections: [],
      licence: 'https://creativecommons.org/licenses/by-nc/4.0/',
      published: '2023-01-09',
      journal: 'Test Cell Reports',
    });
  });

  it('keeps a title-only record (a correction notice) as an article with no abstract or sections', () => {
    expect(articles[1]).toMatchObject({
      id: 'pmid:39000003',
      pmid: '39000003',
      title: 'Correction: Mitochondrial fission in ageing fibroblasts',
      abstract: '',
      sections: [],
      captions: [],
      mesh: [],
      published: null,
      journal: null,
    });
  });

  it('reads body paragraphs outside any sec as an untitled section, and a season as the year', () => {
    expect(articles[2]).toMatchObject({
      abstract: '',
      sections: [
        { heading: '', text: 'Yeast cells starved of nitrogen raise autophagy flux within an hour.' },
      ],
      published: '2023',
      licence: null,
      journal: null,
    });
  });
});
