import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readPdf } from '../../sources/pdf.js';
import { collect, fixture } from './helpers/collect.js';
import { CORAL_INFO, CORAL_PAGES, makePdf } from './helpers/make-pdf.js';

async function* bytes(b: Uint8Array): AsyncGenerator<Uint8Array> {
  yield b;
}

describe('PDF reader', () => {
  const path = fixture('pdf/coral-bleaching.pdf');

  it('the committed fixture is exactly what the generator writes', () => {
    expect(readFileSync(path).equals(makePdf(CORAL_PAGES, CORAL_INFO))).toBe(true);
  });

  it('reads title (largest type, since the metadata title is a file name), DOI, abstract and sections', async () => {
    const { articles, deadLetters, positions } = await collect(readPdf(path));
    expect(deadLetters).toEqual([]);
    expect(positions).toEqual([null]);
    expect(articles[0]).toMatchObject({
      id: 'doi:10.5555/coral.2020.17',
      source: 'pdf',
      sourceUri: path,
      doi: '10.5555/coral.2020.17',
      title: 'Thermal stress and symbiont loss in reef-building corals',
      abstract:
        'Corals expel their algal symbionts when water stays 1 °C above the summer maximum for four weeks.',
      sections: [
        {
          heading: 'Introduction',
          // hyphenated line end joined, page number dropped, paragraph gap kept
          text: 'Coral bleaching is the loss of Symbiodiniaceae from coral tissue. It has become more frequent as oceans warm.\n\nMass bleaching events now recur every six years on average.',
        },
        { heading: 'Results', text: 'Colonies of Acropora bleached first, after 3.2 degree heating weeks.' },
      ],
    });
    // the author line before the first heading and the reference list are left out
    expect(JSON.stringify(articles[0])).not.toMatch(/Ana Reyes|Hughes/);
  });

  it('prefers a real metadata title', async () => {
    const pdf = makePdf([[{ text: 'Printed heading', size: 16 }, { text: 'Body text about ferns.' }]], {
      title: 'Spore dispersal in ferns',
    });
    const { articles } = await collect(readPdf(bytes(pdf), { path: 'mem.pdf' }));
    expect(articles[0]).toMatchObject({
      title: 'Spore dispersal in ferns',
      sections: [{ heading: '', text: 'Printed heading\n\nBody text about ferns.' }],
    });
  });

  it("a PDF without text (a scan) is a 'no text' dead letter", async () => {
    const pdf = makePdf([[]]);
    const { articles, deadLetters } = await collect(readPdf(bytes(pdf), { path: 'scan.pdf' }));
    expect(articles).toEqual([]);
    expect(deadLetters).toMatchObject([
      {
        reason: 'no text',
        processor: 'sources/pdf',
        origin: { kind: 'file', path: 'scan.pdf', position: null },
      },
    ]);
  });

  it('a scan whose metadata names a title is kept as a title-only article', async () => {
    const pdf = makePdf([[]], { title: 'Coral spawning survey, scanned' });
    const { articles, deadLetters } = await collect(readPdf(bytes(pdf), { path: 'titled-scan.pdf' }));
    expect(deadLetters).toEqual([]);
    expect(articles).toMatchObject([
      { source: 'pdf', title: 'Coral spawning survey, scanned', abstract: '', sections: [] },
    ]);
  });

  it('a damaged PDF is one dead letter', async () => {
    const pdf = makePdf(CORAL_PAGES);
    const broken = Buffer.concat([pdf.subarray(0, 200), Buffer.from('garbage'.repeat(20))]);
    const { articles, deadLetters } = await collect(readPdf(bytes(broken), { path: 'broken.pdf' }));
    expect(articles).toEqual([]);
    expect(deadLetters).toMatchObject([
      { reason: expect.stringMatching(/^malformed PDF: /), origin: { path: 'broken.pdf' } },
    ]);
    const notPdf = await collect(readPdf(bytes(Buffer.from('hello, not a pdf')), { path: 'x.pdf' }));
    expect(notPdf.deadLetters).toMatchObject([{ reason: 'malformed PDF: no %PDF- header' }]);
  });
});
