import { describe, expect, it } from 'vitest';
import { Article } from '../../schemas/article.js';
import {
  CITE,
  cleanInline,
  cleanText,
  dropCitations,
  finishArticle,
  parseDate,
  partialDate,
  stripMarkup,
} from '../../sources/normalise.js';

describe('text cleaning', () => {
  it('collapses whitespace and removes invisible characters in one-line text', () => {
    expect(cleanInline('  Ca\u00ad2+\u200b  uptake\tin\n\u00a0cells ')).toBe('Ca2+ uptake in cells');
    expect(cleanInline('A\u0000B\u0007C')).toBe('ABC');
  });

  it('keeps paragraphs and line breaks in running text, nothing more', () => {
    const messy = 'First  para\r\nstill first.\r\n\r\n\r\n\r\n  Second\u2028para.  \n\n\n';
    expect(cleanText(messy)).toBe('First para\nstill first.\n\nSecond\npara.');
  });

  it('is idempotent', () => {
    const once = cleanText(' a \u00a0 b\n\n\n c\u00ad ');
    expect(cleanText(once)).toBe(once);
    expect(cleanInline(cleanInline(' x  y '))).toBe('x y');
  });

  it('normalises to NFC so the same word hashes the same', () => {
    expect(cleanInline('Mu\u0308ller')).toBe('Müller');
  });

  it('strips leaked HTML/JATS inline tags and decodes references, leaving comparisons alone', () => {
    expect(
      stripMarkup('<jats:p>The <i>lac</i> operon &amp; CO<sub>2</sub> at p &lt; 0.05 &#x2013; ok</jats:p>'),
    ).toBe('The lac operon & CO2 at p < 0.05 – ok');
    expect(stripMarkup('a<b and c>d, p <0.05')).toBe('a<b and c>d, p <0.05');
  });

  it('removes numbered citation marks with their brackets and separators', () => {
    expect(dropCitations(`soils [${CITE}], [${CITE}]–[${CITE}]. Next (${CITE}, ${CITE}) here`)).toBe(
      'soils. Next here',
    );
    expect(dropCitations('no marks [1]')).toBe('no marks [1]');
  });
});

describe('dates', () => {
  it('builds YYYY[-MM[-DD]] from parts, dropping what is not valid', () => {
    expect(partialDate('2024', 'Mar', '14')).toBe('2024-03-14');
    expect(partialDate(2024, 6, null)).toBe('2024-06');
    expect(partialDate('2023', 'Spring', null)).toBe('2023');
    expect(partialDate('2023', '2', '30')).toBe('2023-02');
    expect(partialDate('2024', '2', '29')).toBe('2024-02-29');
    expect(partialDate('99', '1', '1')).toBeNull();
  });

  it('parses the date strings sources write', () => {
    expect(parseDate('1998 Dec-1999 Jan')).toBe('1998');
    expect(parseDate('1999 Nov-Dec')).toBe('1999');
    expect(parseDate('2000 Spring')).toBe('2000');
    expect(parseDate('2001 Jan 15')).toBe('2001-01-15');
    expect(parseDate('2020-07-03T10:00:00Z')).toBe('2020-07-03');
    expect(parseDate('2020/5')).toBe('2020-05');
    expect(parseDate('May 2020')).toBe('2020-05');
    expect(parseDate('17 May 2020')).toBe('2020-05-17');
    expect(parseDate(2019)).toBe('2019');
    expect(parseDate('circa 1850s')).toBe('1850');
    expect(parseDate('unknown')).toBeNull();
    expect(parseDate(null)).toBeNull();
  });
});

describe('finishArticle', () => {
  const base = {
    source: 'test',
    doi: null,
    pmid: null,
    pmcid: null,
    title: '  Gut  microbes ',
    abstract: 'Bacteria  digest fibre.',
    sections: [
      { heading: 'Intro', text: 'Fibre is food.' },
      { heading: 'Empty', text: '   ' },
    ],
    journal: null,
    published: null,
    licence: null,
  };

  it('cleans, hashes, picks the id and validates against the Article schema', () => {
    const r = finishArticle({
      ...base,
      doi: 'https://doi.org/10.5555/ABC.1',
      pmid: ' 123 ',
      pmcid: '456',
      keywords: ['a', 'A', ' b '],
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(Article.parse(r.article)).toEqual(r.article);
    expect(r.article).toMatchObject({
      id: 'doi:10.5555/abc.1',
      doi: '10.5555/abc.1',
      pmid: '123',
      pmcid: 'PMC456',
      title: 'Gut microbes',
      abstract: 'Bacteria digest fibre.',
      sections: [{ heading: 'Intro', text: 'Fibre is food.' }],
      keywords: ['a', 'b'],
      captions: [],
      mesh: [],
    });
    expect(r.article.contentHash).toMatch(/^[0-9a-f]{32}$/);
  });

  it('falls back DOI > PMID > PMCID > content hash', () => {
    const id = (over: object) => {
      const r = finishArticle({ ...base, ...over });
      return r.ok ? r.article.id : r.reason;
    };
    expect(id({ pmid: '123', pmcid: 'PMC9' })).toBe('pmid:123');
    expect(id({ pmcid: 'pmc9' })).toBe('pmcid:PMC9');
    expect(id({})).toMatch(/^sha256:[0-9a-f]{32}$/);
    // ids that are not ids are dropped rather than trusted
    expect(id({ doi: 'not a doi', pmid: 'PMID 12' })).toMatch(/^sha256:/);
  });

  it('gives the same id and hash for the same content, whatever the whitespace', () => {
    const a = finishArticle(base);
    const b = finishArticle({ ...base, title: 'Gut microbes', abstract: 'Bacteria digest   fibre.' });
    expect(
      a.ok && b.ok && a.article.id === b.article.id && a.article.contentHash === b.article.contentHash,
    ).toBe(true);
  });

  it('is idempotent on a finished article', () => {
    const a = finishArticle({ ...base, doi: '10.5555/x' });
    if (!a.ok) throw new Error(a.reason);
    const again = finishArticle(a.article);
    expect(again).toEqual(a);
  });

  it('keeps a title-only article (no abstract, no section text) with its MeSH headings', () => {
    const mesh = [{ descriptorUi: 'D012988', name: 'Soil Microbiology', majorTopic: true, qualifiers: [] }];
    const r = finishArticle({
      ...base,
      pmid: '123',
      abstract: ' ',
      sections: [{ heading: 'x', text: '\n' }],
      mesh,
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(Article.parse(r.article)).toEqual(r.article);
    expect(r.article).toMatchObject({
      id: 'pmid:123',
      title: 'Gut microbes',
      abstract: '',
      sections: [],
      mesh,
    });
    expect(r.article.contentHash).toMatch(/^[0-9a-f]{32}$/);
  });

  it("refuses an article with no title, no abstract and no section text as 'no text', MeSH or not", () => {
    const empty = { ...base, title: ' \u200b ', abstract: ' ', sections: [{ heading: 'x', text: '\n' }] };
    expect(finishArticle(empty)).toEqual({ ok: false, code: 'no-text', reason: 'no text' });
    expect(
      finishArticle({
        ...empty,
        pmid: '123',
        keywords: ['soil'],
        mesh: [{ descriptorUi: 'D012988', name: 'Soil Microbiology', majorTopic: true, qualifiers: [] }],
      }),
    ).toEqual({ ok: false, code: 'no-text', reason: 'no text' });
  });

  it('reports a schema violation as a reason, not an exception', () => {
    const r = finishArticle({ ...base, source: '' });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/^invalid article/);
    if (!r.ok) expect(r.code).toBe('invalid-article');
  });
});
