import { describe, expect, it } from 'vitest';
import { readJats } from '../../sources/jats.js';
import { readPath } from '../../sources/read.js';
import type { XmlElement } from '../../sources/xml.js';
import { linearMathml } from '../../sources/xml-text.js';
import { collect, fixture } from './helpers/collect.js';

/**
 * PLOS-style full text with formulas in every shape real articles use: MathML with and without a
 * prefix, under <alternatives> with a graphic, pictures only, TeX, plain text with scripts, and
 * formulas nested inside formulas both ways. Formulas once sent the reader into endless recursion
 * (a formula with no TeX and no <mml:math> rendered itself again): every such article was lost.
 */
describe('JATS formulas', async () => {
  const path = fixture('jats/plos-formulas.xml');
  const { articles, deadLetters } = await collect(readPath(path));
  const a = articles[0]!;
  const section = (heading: string) => a.sections.find((s) => s.heading === heading)?.text ?? '';

  it('reads the article whole: one article, no dead letter', () => {
    expect(deadLetters).toEqual([]);
    expect(articles).toHaveLength(1);
    expect(a.id).toBe('doi:10.5555/tcb.2024.0017');
    expect(a.sections.map((s) => s.heading)).toEqual([
      'Introduction',
      'Model',
      'Results',
      'Results / Boxed notes',
    ]);
  });

  it('reads MathML under <alternatives> as linear text, the graphic beside it ignored', () => {
    expect(a.abstract).toBe('Colony radius grows as t^(1/2) in the Okafor laboratory strain.');
    expect(section('Model')).toContain('The density follows x^2 + y near the edge.');
  });

  it('reads MathML in the default namespace (no mml: prefix) in a display formula with a label', () => {
    expect(section('Model')).toContain('The rate is dN/dt = rN(1 − N_0) for every colony.');
    expect(section('Model')).not.toContain('(2)');
  });

  it('survives formulas that are only pictures (inline and display), keeping the prose around them', () => {
    expect(section('Model')).toContain('Older files set formulas as pictures only, like here.');
    expect(section('Model')).not.toContain('(1)');
  });

  it('keeps TeX where the article has it, also with MathML nested inside the tex-math', () => {
    expect(section('Results')).toContain('The fitted law was $\\sqrt{k t}$ for all strains.');
  });

  it('finds a tex-math nested inside the MathML of a display formula', () => {
    expect(section('Results')).toContain('$$\\alpha + \\beta$$');
  });

  it('reads a formula typed as text with <sub>/<sup> as scripts', () => {
    expect(section('Results')).toContain('Spreading obeys v = k_0c^2 at low density.');
  });

  it('reads boxed text, lists and definition lists once each, captions apart, back matter and sub-articles left out', () => {
    expect(section('Results / Boxed notes')).toBe(
      'Box 1\n\nRates were measured at sqrt(D) resolution.\n\nfirst point\nsecond point\n\nN: cell density',
    );
    expect(a.captions).toEqual([
      { kind: 'figure', label: 'Fig 1', text: 'Colony growth. Radius over time.' },
      { kind: 'table', label: 'Table 1', text: 'Strains used.' },
    ]);
    const all = [a.abstract, ...a.sections.map((s) => s.text)].join('\n');
    expect(all).not.toMatch(/reviewers|A reference|Author response|Thanks\./);
  });

  it('resolves entities the DTD subset declares, character references and &amp;', () => {
    expect(a.abstract).toContain('Okafor laboratory strain');
    expect(section('Introduction')).toBe('Biofilms are dense bacterial communities’ shared matrix & water.');
  });

  it('reads formulas nested inside formulas thousands deep, both ways, without overflowing', async () => {
    const n = 5000;
    const inlineNest = `${'<inline-formula><tex-math>'.repeat(n)}q${'</tex-math></inline-formula>'.repeat(n)}`;
    const mathNest = `${'<disp-formula><mml:math><mml:mrow>'.repeat(n)}<mml:mi>z</mml:mi>${'</mml:mrow></mml:math></disp-formula>'.repeat(n)}`;
    const xml = `<article xmlns:mml="http://www.w3.org/1998/Math/MathML"><front><article-meta><title-group><article-title>Nested</article-title></title-group></article-meta></front><body><sec><title>S</title><p>a ${inlineNest} b</p><p>c ${mathNest} d</p></sec></body></article>`;
    const { articles, deadLetters } = await collect(readJats(bytes(xml), { path: 'nested.xml' }));
    expect(deadLetters).toEqual([]);
    expect(articles[0]!.sections[0]!.text).toBe('a $q$ b\n\nc z d');
  });
});

describe('MathML as linear text', () => {
  const el = (name: string, ...children: (XmlElement | string)[]): XmlElement => ({
    name,
    attrs: {},
    children,
  });
  it('reads scripts, fractions, roots, fences and operators', () => {
    const math = el(
      'mml:math',
      el('mml:msup', el('mml:mi', 'x'), el('mml:mn', '2')),
      el('mml:mo', '+'),
      el('mml:mi', 'y'),
    );
    expect(linearMathml(math)).toBe('x^2 + y');
    expect(
      linearMathml(
        el('math', el('mfrac', el('mrow', el('mi', 'a'), el('mo', '+'), el('mi', 'b')), el('mn', '2'))),
      ),
    ).toBe('(a + b)/2');
    expect(
      linearMathml(
        el(
          'math',
          el(
            'msubsup',
            el('mi', 'x'),
            el('mi', 'i'),
            el('mrow', el('mi', 'n'), el('mo', '+'), el('mn', '1')),
          ),
        ),
      ),
    ).toBe('x_i^(n + 1)');
    expect(linearMathml(el('math', el('mo', '−'), el('msqrt', el('mi', 'D'))))).toBe('−sqrt(D)');
    expect(linearMathml(el('math', el('semantics', el('mi', 'k'), el('annotation', 'k-tex'))))).toBe('k');
  });

  it('reads a 100,000-deep MathML tree without recursion', () => {
    let node: XmlElement = el('mi', 'w');
    for (let i = 0; i < 100_000; i++) node = el('mrow', node);
    expect(linearMathml(el('math', node))).toBe('w');
  });
});

async function* bytes(s: string): AsyncGenerator<Uint8Array> {
  yield new TextEncoder().encode(s);
}
