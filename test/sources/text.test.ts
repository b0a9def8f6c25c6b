import { describe, expect, it } from 'vitest';
import { markdownToDraft, plainTextToDraft, readText } from '../../sources/text.js';
import { collect, fixture } from './helpers/collect.js';

describe('Markdown reader', () => {
  it('reads front matter, the H1 title, an Abstract section, nested headings; drops references and markup', async () => {
    const path = fixture('text/circadian.md');
    const { articles, deadLetters, positions } = await collect(readText(path, { markdown: true }));
    expect(deadLetters).toEqual([]);
    expect(positions).toEqual([null]);
    expect(articles[0]).toMatchObject({
      id: 'doi:10.5555/clock.2021.9',
      source: 'markdown',
      sourceUri: path,
      title: 'Light resets the Drosophila circadian clock through CRY',
      abstract: 'Cryptochrome (CRY) degrades TIMELESS within minutes of light exposure, resetting the clock.',
      sections: [
        {
          heading: 'Introduction',
          text: 'Circadian clocks keep 24-hour time in nearly all animals (see the review).',
        },
        {
          heading: 'Introduction / Molecular clockwork',
          text: 'PER and TIM form a negative feedback loop:\n\n- CLK and CYC activate per and tim\n- PER/TIM repress CLK-CYC',
        },
        {
          heading: 'Results',
          text: 'Genotype | Phase shift (h)\nwild type | 2.1\n\nFlies lacking cry did not shift their phase.\n\nraw data kept verbatim',
        },
      ],
      keywords: ['circadian clock', 'Drosophila'],
      journal: 'Test Chronobiology',
      published: '2021-09',
    });
  });

  it('takes the first line as title when there is no H1, and reads setext headings', async () => {
    const { articles } = await collect(readText(fixture('text/plain-notes.md'), { markdown: true }));
    expect(articles[0]).toMatchObject({
      title: 'Photoperiodism in Arabidopsis',
      abstract: '',
      sections: [
        {
          heading: '',
          text: 'Long days trigger flowering through CONSTANS. A second line of the same paragraph.',
        },
        { heading: 'Setext section', text: 'FT protein moves from leaves to the shoot apex.' },
      ],
    });
  });

  it('keeps snake_case and arithmetic asterisks, removes emphasis', () => {
    const d = markdownToDraft(
      '# T\n\nThe gene_name field, 2 * 3 = 6, and *italic* plus **bold** and ~~gone~~.\n',
    );
    expect(d.sections?.[0]?.text).toBe('The gene_name field, 2 * 3 = 6, and italic plus bold and gone.');
  });

  it('a later H1 after the title becomes a top-level section', () => {
    const d = markdownToDraft('# Title\n\nIntro.\n\n# Second part\n\nMore.\n');
    expect(d.title).toBe('Title');
    expect(d.sections).toEqual([
      { heading: '', text: 'Intro.' },
      { heading: 'Second part', text: 'More.' },
    ]);
  });
});

describe('plain text reader', () => {
  it('takes the first line as title and finds sections from heading lines, nested by numbering', async () => {
    const path = fixture('text/tardigrade.txt');
    const { articles, deadLetters } = await collect(readText(path));
    expect(deadLetters).toEqual([]);
    expect(articles[0]).toMatchObject({
      source: 'text',
      title: 'Desiccation tolerance of tardigrades',
      abstract:
        'Tardigrades survive complete drying by forming glass-like cytoplasm rich in disordered proteins.',
      sections: [
        {
          heading: 'Introduction',
          text: 'Tardigrades are microscopic animals found in moss and lichens. Their tolerance of extremes has made them a model for anhydrobiosis.',
        },
        {
          heading: 'Methods / Animal collection',
          text: 'Hypsibius exemplaris was reared on algae at 18 °C.',
        },
        { heading: 'Results', text: 'Survival after 10 days dry was 85%.' },
      ],
    });
    expect(articles[0]!.id).toMatch(/^sha256:/);
  });

  it('reads a run-in abstract and keeps unheaded text as one section', () => {
    const d = plainTextToDraft(
      'Title line\n\nABSTRACT: Short summary here.\n\nBody text without any heading.\n',
    );
    expect(d.abstract).toBe('Short summary here.');
    expect(d.sections).toEqual([{ heading: '', text: 'Body text without any heading.' }]);
  });

  it('an Abstract heading on its own line takes the paragraphs up to the next heading', () => {
    const d = plainTextToDraft(
      'Title line\n\nAbstract\nFirst part.\n\nSecond part.\n\nIntroduction\nIntro text.\n',
    );
    expect(d.abstract).toBe('First part.\n\nSecond part.');
    expect(d.sections).toEqual([{ heading: 'Introduction', text: 'Intro text.' }]);
  });

  it('does not mistake numbered list items for headings', () => {
    const d = plainTextToDraft(
      'T\n\nIntroduction\nWe did three things:\n\n1. The cells were grown\n2. The cells were counted\n',
    );
    expect(d.sections).toEqual([
      {
        heading: 'Introduction',
        text: 'We did three things:\n\n1. The cells were grown\n2. The cells were counted',
      },
    ]);
  });
});
