import { describe, expect, it } from 'vitest';
import { PassageSpan } from '../../schemas/qa.js';
import {
  approxTokens,
  informativeFirst,
  passagesOf,
  sectionText,
  splitText,
} from '../../sources/passages.js';
import { sentenceSpans } from '../../sources/sentences.js';

const words = (s: string) => s.split(/\s+/).filter(Boolean).length;
const byWords = { countTokens: words };

/** A little pseudo-random generator so the property test is repeatable. */
function rng(seed: number) {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

function randomText(rand: () => number): string {
  const vocab = [
    'cells',
    'divide',
    'Mitochondria',
    'E. coli',
    'grew',
    'at',
    '37',
    '°C',
    'et al.',
    'Fig.',
    '2',
    'showed',
    'ATGCGTACGTTAGC',
    'protein',
    'binding',
    'i.e.',
    'rapidly',
  ];
  const paras: string[] = [];
  for (let p = 0; p < 1 + Math.floor(rand() * 5); p++) {
    const sentences: string[] = [];
    for (let s = 0; s < 1 + Math.floor(rand() * 8); s++) {
      const n = 1 + Math.floor(rand() * 25);
      const w = Array.from({ length: n }, () => vocab[Math.floor(rand() * vocab.length)]!);
      sentences.push(`${w.join(' ').replace(/^./, (c) => c.toUpperCase())}.`);
    }
    paras.push(sentences.join(rand() < 0.2 ? '\n' : ' '));
  }
  return paras.join('\n\n');
}

describe('sentence spans', () => {
  it('splits at sentence ends but not after abbreviations, initials or decimals', () => {
    const t = 'Smith et al. Showed growth at 3.5 mM (Fig. 2). E. coli grew. Then it stopped! Why? Because.';
    expect(sentenceSpans(t).map((s) => t.slice(s.start, s.end))).toEqual([
      'Smith et al. Showed growth at 3.5 mM (Fig. 2).',
      'E. coli grew.',
      'Then it stopped!',
      'Why?',
      'Because.',
    ]);
  });
});

describe('passagesOf', () => {
  const article = {
    abstract: 'Short abstract.',
    sections: [
      {
        heading: 'Intro',
        text: 'First paragraph is here.\n\nSecond paragraph follows it.\n\nThird one ends.',
      },
      {
        heading: 'Long',
        text: 'One two three four five. Six seven eight nine ten. Eleven twelve thirteen fourteen fifteen.',
      },
      { heading: 'Word', text: 'tiny Supercalifragilisticexpialidociousgenesequence tiny' },
    ],
  };

  it('numbers the abstract -1 and sections from 0, and every span slices its own text', () => {
    const ps = passagesOf(article, { maxTokens: 8, ...byWords });
    expect(ps[0]).toEqual({ sectionIndex: -1, start: 0, end: 15, text: 'Short abstract.' });
    for (const p of ps) {
      expect(PassageSpan.parse(p)).toEqual(p);
      expect(sectionText(article, p.sectionIndex)!.slice(p.start, p.end)).toBe(p.text);
    }
  });

  it('packs whole paragraphs while they fit, then cuts at sentences, then at spaces', () => {
    const intro = (max: number) =>
      passagesOf({ abstract: '', sections: [article.sections[0]!] }, { maxTokens: max, ...byWords }).map(
        (p) => p.text,
      );
    expect(intro(100)).toEqual([
      'First paragraph is here.\n\nSecond paragraph follows it.\n\nThird one ends.',
    ]);
    expect(intro(8)).toEqual(['First paragraph is here.\n\nSecond paragraph follows it.', 'Third one ends.']);
    const long = passagesOf(
      { abstract: '', sections: [article.sections[1]!] },
      { maxTokens: 6, ...byWords },
    ).map((p) => p.text);
    expect(long).toEqual([
      'One two three four five.',
      'Six seven eight nine ten.',
      'Eleven twelve thirteen fourteen fifteen.',
    ]);
    const words3 = passagesOf(
      { abstract: '', sections: [article.sections[1]!] },
      { maxTokens: 3, ...byWords },
    ).map((p) => p.text);
    expect(words3.slice(0, 2)).toEqual(['One two three', 'four five.']);
  });

  it('never cuts a word: one longer than the budget is a passage of its own', () => {
    const ps = splitText(article.sections[2]!.text, { maxTokens: 4 }); // ~4 chars a token
    const texts = ps.map((s) => article.sections[2]!.text.slice(s.start, s.end));
    expect(texts).toEqual(['tiny', 'Supercalifragilisticexpialidociousgenesequence', 'tiny']);
  });

  it('overlaps whole units without ever stalling', () => {
    const text = 'A1 a2. B1 b2. C1 c2. D1 d2. E1 e2.';
    const spans = splitText(text, { maxTokens: 4, overlapTokens: 2, ...byWords }).map((s) =>
      text.slice(s.start, s.end),
    );
    expect(spans).toEqual(['A1 a2. B1 b2.', 'B1 b2. C1 c2.', 'C1 c2. D1 d2.', 'D1 d2. E1 e2.']);
  });

  it('rejects impossible budgets', () => {
    expect(() => splitText('x', { maxTokens: 0 })).toThrow();
    expect(() => splitText('x', { maxTokens: 4, overlapTokens: 4 })).toThrow();
  });

  it('holds its invariants on random text (budget, exact slices, no mid-word cuts, full coverage)', () => {
    const rand = rng(42);
    for (let round = 0; round < 200; round++) {
      const text = randomText(rand);
      const maxTokens = 5 + Math.floor(rand() * 60);
      const overlapTokens = rand() < 0.5 ? 0 : Math.floor(rand() * (maxTokens / 2));
      const spans = splitText(text, { maxTokens, overlapTokens });
      for (const s of spans) {
        const slice = text.slice(s.start, s.end);
        expect(slice).toBe(slice.trim());
        // cut only at whitespace: the characters just outside a span are spaces or the text's ends
        expect(s.start === 0 || /\s/.test(text[s.start - 1]!)).toBe(true);
        expect(s.end === text.length || /\s/.test(text[s.end]!)).toBe(true);
        if (approxTokens(slice) > maxTokens) expect(slice).not.toMatch(/\s/); // only a lone long word may exceed
      }
      // every word of the text is in some passage
      const wordsIn = new Set(
        spans.flatMap((s) => [...text.slice(s.start, s.end).matchAll(/\S+/g)].map((m) => m.index! + s.start)),
      );
      for (const m of text.matchAll(/\S+/g)) expect(wordsIn.has(m.index!)).toBe(true);
      // passages move forward
      for (let i = 1; i < spans.length; i++) expect(spans[i]!.end).toBeGreaterThan(spans[i - 1]!.end);
    }
  });
});

describe('informativeFirst', () => {
  it('puts the abstract, then results and discussion, then the rest, and methods and back matter last', () => {
    const sections = [
      'Introduction',
      'Materials and methods',
      'Results',
      'Discussion',
      'Acknowledgements',
    ].map((heading) => ({ heading, text: `${heading} text.` }));
    const passages = [-1, 0, 0, 1, 2, 2, 3, 4].map((sectionIndex, i) => ({
      sectionIndex,
      start: i,
      end: i + 1,
      text: `p${i}`,
    }));
    const order = informativeFirst({ sections }, passages).map((p) => p.text);
    expect(order).toEqual(['p0', 'p4', 'p5', 'p6', 'p1', 'p2', 'p3', 'p7']);
    // With extract.maxPassages 4, the results are kept and the methods are not.
    expect(order.slice(0, 4)).toEqual(['p0', 'p4', 'p5', 'p6']);
  });
});
