import { describe, expect, it } from 'vitest';
import { Article } from '../../schemas/article.js';
import { dedupKey, dedupKeys, mergeArticles, sameArticle } from '../../sources/dedup.js';
import { readJats } from '../../sources/jats.js';
import { readMedline } from '../../sources/medline.js';
import { finishArticle } from '../../sources/normalise.js';
import { collect, fixture } from './helpers/collect.js';

describe('cross-source dedup', async () => {
  const jats = (await collect(readJats(fixture('jats/soil-metagenome.nxml')))).articles[0]!;
  const medline = (await collect(readMedline(fixture('medline/pubmed-sample.xml')))).articles[0]!;

  it('gives the JATS and MEDLINE copies of one paper the same key (DOI, case-insensitive)', () => {
    expect(jats.id).toBe(medline.id);
    expect(dedupKey(jats)).toBe('doi:10.5555/tmr.2024.0042');
    expect(dedupKey(medline)).toBe(dedupKey(jats));
    expect(sameArticle(jats, medline)).toBe(true);
  });

  it('finds a pair through any shared id even when their ids differ', () => {
    const noDoi = { ...medline, doi: null, id: 'pmid:39000001' };
    expect(dedupKey(noDoi)).toBe('pmid:39000001');
    expect(dedupKeys(noDoi)).toEqual(['pmid:39000001', 'pmcid:PMC11000001']);
    expect(dedupKeys(jats)).toEqual(['doi:10.5555/tmr.2024.0042', 'pmid:39000001', 'pmcid:PMC11000001']);
    expect(sameArticle(noDoi, jats)).toBe(true);
    const other = (a: Article) => ({ ...a, doi: '10.1/other', pmid: '1', pmcid: null });
    expect(sameArticle(other(medline), jats)).toBe(false);
  });

  it('merges to the full text of JATS with the MeSH headings of MEDLINE', () => {
    const m = mergeArticles(medline, jats);
    expect(Article.parse(m)).toEqual(m);
    expect(m).toMatchObject({
      id: jats.id,
      source: 'jats+medline',
      title: jats.title,
      abstract: jats.abstract,
      sections: jats.sections,
      captions: jats.captions,
      licence: jats.licence,
      journal: jats.journal,
      published: jats.published,
      mesh: medline.mesh,
      publicationTypes: medline.publicationTypes,
      contentHash: jats.contentHash,
    });
    expect(m.keywords).toEqual(['metagenomics', 'drought', 'Streptomyces', 'antibiotics']);
  });

  it('is symmetric and idempotent', () => {
    expect(mergeArticles(jats, medline)).toEqual(mergeArticles(medline, jats));
    const m = mergeArticles(jats, medline);
    expect(mergeArticles(m, medline)).toEqual(m);
  });

  it('fills identifiers the richer copy lacks, and its id follows (a DOI learnt from the other copy)', () => {
    const done = finishArticle({
      source: 'text',
      doi: null,
      pmid: '39000001',
      pmcid: null,
      title: 'Drought and Streptomyces',
      abstract: '',
      sections: [{ heading: 'Body', text: 'A long full text body. '.repeat(50) }],
      journal: null,
      published: null,
      licence: null,
    });
    if (!done.ok) throw new Error(done.reason);
    const m = mergeArticles(done.article, medline);
    expect(m.sections).toEqual(done.article.sections);
    expect(m.abstract).toBe(medline.abstract); // the full text had none
    expect(m).toMatchObject({
      doi: medline.doi,
      pmcid: 'PMC11000001',
      id: medline.id,
      source: 'medline+text',
    });
  });
});
