import { describe, expect, it } from 'vitest';
import { readJsonl } from '../../sources/jsonl.js';
import { JsonlMapping, resolveMapping } from '../../sources/jsonl-mapping.js';
import { collect, fixture } from './helpers/collect.js';

async function* text(s: string): AsyncGenerator<Uint8Array> {
  yield Buffer.from(s);
}

describe('JSONL reader: S2ORC preset', async () => {
  const path = fixture('jsonl/s2orc.jsonl');
  const { articles, deadLetters, positions } = await collect(readJsonl(path, { mapping: 's2orc' }));
  const [v2020, api, metaOnly] = articles;

  it('reads every line', () => {
    expect(deadLetters).toEqual([]);
    expect(positions).toEqual(['line 1', 'line 2', 'line 3']);
    expect(articles.every((a) => a.source === 's2orc' && a.sourceUri === path)).toBe(true);
  });

  it('reads a 2020 release record: ids, ::: abstract breaks, body_text paragraphs grouped by section, cite spans cut', () => {
    expect(v2020).toMatchObject({
      id: 'doi:10.5555/qs.2019.1',
      doi: '10.5555/qs.2019.1',
      pmid: '31000001',
      pmcid: 'PMC6500001',
      title: 'Quorum sensing in Vibrio fischeri biofilms',
      abstract:
        'Background: Vibrio fischeri colonises squid light organs.\n\nResults: Biofilm formation required the lux operon.',
      sections: [
        {
          heading: 'Introduction',
          text: 'Bacteria coordinate behaviour by quorum sensing.\n\nVibrio fischeri is the model organism for this process.',
        },
        { heading: 'Results', text: 'Deleting luxR abolished biofilm formation (Figure 1).' },
      ],
      journal: 'Test Journal of Bacteriology',
      published: '2019',
    });
  });

  it('reads a datasets-API record: externalids, annotated text, numbered headers nested', () => {
    expect(api).toMatchObject({
      id: 'doi:10.5555/c4.2022.3',
      pmid: '36500001',
      pmcid: 'PMC9700001',
      title: 'Photosynthetic efficiency of C4 grasses under heat',
      abstract: 'C4 grasses kept photosynthesis at 45 degrees.',
      sections: [
        { heading: 'Introduction', text: 'Heat waves are becoming common.' },
        { heading: 'Introduction / Study species', text: 'We grew six C4 grasses.' },
        { heading: 'Results', text: 'Assimilation fell by 12%.' },
      ],
      licence: 'CCBY',
    });
  });

  it('reads a metadata-only record (abstract, venue) under a content-hash id', () => {
    expect(metaOnly).toMatchObject({
      doi: null,
      pmid: null,
      abstract: 'Wild mice have shorter telomeres than laboratory strains.',
      journal: 'Mammal Test',
      published: '2015',
    });
    expect(metaOnly!.id).toMatch(/^sha256:/);
  });

  it("'auto' picks the S2ORC mapping for S2ORC-looking lines", async () => {
    const auto = await collect(readJsonl(path));
    expect(auto.articles).toEqual(articles);
  });
});

describe('JSONL reader: generic preset and bad lines', async () => {
  const path = fixture('jsonl/generic.jsonl');
  const { articles, deadLetters, positions } = await collect(readJsonl(path, { mapping: 'generic' }));

  it('keeps going past bad lines: one dead letter each, with its line number and the line as payload', () => {
    expect(positions).toEqual(['line 1', 'line 5', 'line 6', 'line 7']);
    expect(deadLetters.map((d) => [d.origin.kind === 'file' && d.origin.position, d.reason])).toEqual([
      ['line 2', expect.stringMatching(/^invalid JSON/)],
      ['line 4', 'not a JSON object'],
      ['line 8', 'no text'], // ids and metadata, but no title, abstract or text
    ]);
    expect(deadLetters[0]!.payload).toBe('{"id": "a2", "title": "broken line", "abstract": ');
    expect(deadLetters[2]!.payload).toBe(
      '{"id": "a6", "doi": "10.5555/bee.2020.6", "journal": "Test Apidology", "published": "2020", "keywords": ["honeybee"]}',
    );
    expect(deadLetters.every((d) => d.processor === 'sources/jsonl')).toBe(true);
  });

  it('maps the obvious fields', () => {
    expect(articles[0]).toMatchObject({
      id: 'doi:10.5555/bee.2020.5',
      doi: '10.5555/bee.2020.5',
      pmid: '32000001',
      title: 'Gut microbiota of honeybees',
      abstract: 'Honeybee guts hold five core bacterial taxa.',
      journal: 'Test Apidology',
      published: '2020-07-03',
      keywords: ['honeybee', 'microbiome'],
      licence: 'CC BY 4.0',
      source: 'jsonl',
    });
    expect(articles[1]).toMatchObject({
      doi: null,
      title: 'Title only, no text',
      abstract: '',
      sections: [],
      keywords: [],
    });
    expect(articles[1]!.id).toMatch(/^sha256:/);
    expect(articles[2]).toMatchObject({
      sections: [
        {
          heading: '',
          text: 'Eyespots on butterfly wings deter predators.\n\nThey develop from focal cells.',
        },
      ],
      published: '2018',
      keywords: ['butterfly', 'eyespot'],
    });
    expect(articles[3]).toMatchObject({
      id: 'pmcid:PMC123',
      sections: [
        { heading: 'Methods', text: 'We counted ants.' },
        { heading: 'Results', text: 'There were many ants.' },
      ],
    });
  });
});

describe('JSONL reader: custom mappings', () => {
  it('follows dot paths and case-insensitive keys', async () => {
    const line = JSON.stringify({
      meta: { Headline: 'Ants farm fungi' },
      body: { summary: 'Leafcutter ants grow fungus gardens.' },
      ids: { DOI: '10.5555/ANT' },
    });
    const { articles } = await collect(
      readJsonl(text(`${line}\n`), {
        mapping: { source: 'ants', title: 'meta.headline', abstract: 'body.summary', doi: 'ids.doi' },
      }),
    );
    expect(articles[0]).toMatchObject({
      source: 'ants',
      title: 'Ants farm fungi',
      doi: '10.5555/ant',
      abstract: 'Leafcutter ants grow fungus gardens.',
    });
  });

  it('rejects a mapping with unknown or mistyped fields up front', () => {
    expect(() => resolveMapping({ titel: 'x' } as never)).toThrow(/invalid JSONL mapping/);
    expect(JsonlMapping.safeParse({ title: 3 }).success).toBe(false);
  });

  it('turns a bad mapping into one dead letter rather than an exception', async () => {
    const { deadLetters, articles } = await collect(
      readJsonl(text('{"title":"x","abstract":"y"}\n'), { mapping: { title: '' } as never }),
    );
    expect(articles).toEqual([]);
    expect(deadLetters[0]!.reason).toMatch(/invalid JSONL mapping/);
  });

  it('handles CRLF line ends, a missing final newline and blank lines', async () => {
    const { articles, positions } = await collect(
      readJsonl(text('{"title":"A","abstract":"one"}\r\n\r\n{"title":"B","abstract":"two"}'), {
        mapping: 'generic',
      }),
    );
    expect(articles.map((a) => a.title)).toEqual(['A', 'B']);
    expect(positions).toEqual(['line 1', 'line 3']);
  });
});
