import { describe, expect, it } from 'vitest';
import { reasonOf } from '../../sources/items.js';
import { JATS, jatsToDraft, readJats } from '../../sources/jats.js';
import { MEDLINE, medlineToDraft, readMedline } from '../../sources/medline.js';
import {
  descendants,
  elementPath,
  rawText,
  toXml,
  within,
  type XmlElement,
  type XmlNode,
} from '../../sources/xml.js';
import { readXml, type XmlFormat } from '../../sources/xml-reader.js';
import { inlineText } from '../../sources/xml-text.js';
import { collect } from './helpers/collect.js';
import { pubmedRecord } from './helpers/medline-gen.js';

/**
 * No input can overflow the stack: every walk over a record's tree is iterative or bounded, and
 * the parser itself stops building elements past a depth. A fault nobody foresaw becomes a dead
 * letter naming the record and the element the walker was at, never a bare message.
 */
async function* bytes(s: string): AsyncGenerator<Uint8Array> {
  yield new TextEncoder().encode(s);
}

const el = (name: string, ...children: XmlNode[]): XmlElement => ({ name, attrs: {}, children });

/** n levels of list > list-item around `inner`. */
function nestList(n: number, inner: XmlNode): XmlElement {
  let node = el('list', el('list-item', inner));
  for (let i = 1; i < n; i++) node = el('list', el('list-item', node));
  return node;
}

/** n levels of `name` around `inner`. */
function nest(name: string, n: number, inner: XmlNode): XmlElement {
  let node = el(name, inner);
  for (let i = 1; i < n; i++) node = el(name, node);
  return node;
}

const jatsArticle = (body: string) =>
  `<article><front><article-meta><article-id pub-id-type="doi">10.5555/deep.1</article-id><title-group><article-title>Deep</article-title></title-group></article-meta></front><body>${body}</body></article>`;

describe('10,000 nested elements in a JATS body', () => {
  const n = 10_000;
  const cases: [string, string, string][] = [
    [
      'sections',
      `${'<sec><title>T</title>'.repeat(n)}<p>bottom of the sections</p>${'</sec>'.repeat(n)}`,
      'bottom of the sections',
    ],
    [
      'inline markup',
      `<sec><title>S</title><p>${'<italic>'.repeat(n)}bottom of the markup${'</italic>'.repeat(n)}</p></sec>`,
      'bottom of the markup',
    ],
    [
      'boxes',
      `<sec><title>S</title>${'<boxed-text>'.repeat(n)}<p>bottom of the boxes</p>${'</boxed-text>'.repeat(n)}</sec>`,
      'bottom of the boxes',
    ],
    [
      'lists',
      `<sec><title>S</title>${'<list><list-item>'.repeat(n)}<p>bottom of the lists</p>${'</list-item></list>'.repeat(n)}</sec>`,
      'bottom of the lists',
    ],
    [
      'superscripts',
      `<sec><title>S</title><p>10${'<sup>'.repeat(n)}6${'</sup>'.repeat(n)} bottom of the scripts</p></sec>`,
      '10^6 bottom of the scripts',
    ],
    [
      'formulas',
      `<sec><title>S</title><p>${'<inline-formula><alternatives>'.repeat(n)}<inline-graphic/>${'</alternatives></inline-formula>'.repeat(n)} bottom of the formulas</p></sec>`,
      'bottom of the formulas',
    ],
    [
      'figure groups',
      `<sec><title>S</title><p>bottom of the figures</p>${'<fig-group>'.repeat(n)}<fig><caption><p>deep caption</p></caption></fig>${'</fig-group>'.repeat(n)}</sec>`,
      'bottom of the figures',
    ],
  ];
  for (const [what, body, expected] of cases) {
    it(`reads deeply nested ${what} without a crash, keeping the text`, async () => {
      const { articles, deadLetters } = await collect(
        readJats(bytes(jatsArticle(body)), { path: 'deep.xml' }),
      );
      expect(deadLetters).toEqual([]);
      expect(articles).toHaveLength(1);
      expect(articles[0]!.sections.map((s) => s.text).join('\n')).toContain(expected);
    });
  }
});

describe('walks over trees no parser bounded (100,000 levels)', () => {
  const n = 100_000;
  const article = (body: XmlElement) =>
    el(
      'article',
      el('front', el('article-meta', el('title-group', el('article-title', 'Deep')))),
      el('body', body),
    );

  it('jatsToDraft: nested sections, markup, formulas, boxes and lists', () => {
    const bodies = [
      nest('sec', n, el('p', 'bottom')),
      el('sec', el('p', nest('italic', n, 'bottom'))),
      el('sec', el('p', nest('inline-formula', n, 'bottom'))),
      el(
        'sec',
        el('p', nest('disp-formula', n, el('mml:math', nest('mml:mrow', n, el('mml:mi', 'bottom'))))),
      ),
      el('sec', nest('boxed-text', n, el('p', 'bottom'))),
      el('sec', nestList(n, el('p', 'bottom'))),
      el('sec', el('p', nest('alternatives', n, el('inline-graphic')), ' bottom')),
    ];
    for (const body of bodies) {
      const draft = jatsToDraft(article(body));
      expect(draft.sections!.map((s) => s.text).join(' ')).toContain('bottom');
    }
  });

  it('jatsToDraft: a figure caption under 100,000 figure groups', () => {
    const fig = el('fig', el('label', 'Fig 1'), el('caption', el('p', 'deep caption')));
    const draft = jatsToDraft(article(el('sec', el('p', 'x'), nest('fig-group', n, fig))));
    expect(draft.captions).toEqual([{ kind: 'figure', label: 'Fig 1', text: 'deep caption' }]);
  });

  it('medlineToDraft: an abstract nested 100,000 deep', () => {
    const record = el(
      'MedlineCitation',
      el('PMID', '1'),
      el('Article', el('ArticleTitle', 'T'), el('Abstract', el('AbstractText', nest('i', n, 'bottom')))),
    );
    expect(medlineToDraft(record)!.abstract).toBe('bottom');
  });

  it('the shared helpers: rawText, toXml, descendants, elementPath', () => {
    const leaf = el('leaf', 'x');
    const root = nest('a', n, leaf);
    expect(rawText(root)).toBe('x');
    expect(toXml(root)).toBe(`${'<a>'.repeat(n)}<leaf>x</leaf>${'</a>'.repeat(n)}`);
    expect(descendants(root, 'leaf')).toEqual([leaf]);
    expect(elementPath(root, leaf)).toBe(`${'a/'.repeat(n)}leaf`);
  });
});

describe('a fault inside a reader', () => {
  // The JATS format, except that its walk meets an element it cannot handle.
  const failingAt = (name: string, thrown: () => unknown): XmlFormat => ({
    ...JATS,
    toDraft(record, uri) {
      inlineText(record, {
        special(e) {
          if (e.name === name) throw thrown();
          return undefined;
        },
      });
      return JATS.toDraft(record, uri);
    },
  });
  const xml = `<pmc-articleset>
<article><front><article-meta><article-id pub-id-type="doi">10.5555/fault.1</article-id><title-group><article-title>Faulty</article-title></title-group></article-meta></front>
<body><sec><p>a</p></sec><sec><p>b</p></sec><sec><p>c</p><p>d <inline-formula><mml:math><mml:mi>x</mml:mi></mml:math></inline-formula></p></sec></body></article>
<article><front><article-meta><article-id pub-id-type="pmid">123</article-id><title-group><article-title>Fine</article-title></title-group></article-meta></front></article>
</pmc-articleset>`;

  it('is a dead letter naming the record and the element path; the next record is still read', async () => {
    const format = failingAt(
      'inline-formula',
      () => new TypeError("Cannot read properties of undefined (reading 'name')"),
    );
    const { articles, deadLetters } = await collect(readXml(bytes(xml), format, { path: 'set.xml' }));
    expect(articles.map((a) => a.id)).toEqual(['pmid:123']);
    expect(deadLetters).toHaveLength(1);
    expect(deadLetters[0]).toMatchObject({
      reason:
        "reader fault in doi 10.5555/fault.1, record 1, line 2, at article/body/sec[3]/p[2]/inline-formula: TypeError: Cannot read properties of undefined (reading 'name')",
      processor: 'sources/jats',
      origin: { kind: 'file', path: 'set.xml', position: 'record 1, line 2' },
    });
    expect(deadLetters[0]!.payload).toContain('<article-id pub-id-type="doi">10.5555/fault.1</article-id>');
  });

  it('names the innermost element the walk reached, even when the thrown value is not an Error', async () => {
    const format = failingAt('mml:math', () => 'bad token');
    const { deadLetters } = await collect(readXml(bytes(xml), format, { path: 'set.xml' }));
    expect(deadLetters[0]!.reason).toBe(
      'reader fault in doi 10.5555/fault.1, record 1, line 2, at article/body/sec[3]/p[2]/inline-formula/mml:math: Error: bad token',
    );
  });

  it('MEDLINE: the PMID and the path into the abstract; a fault marked by a structural walk', async () => {
    const format: XmlFormat = {
      ...MEDLINE,
      toDraft(record, uri) {
        for (const t of descendants(record, 'AbstractText'))
          within(t, () => {
            if (t.attrs.Label === 'RESULTS') throw new RangeError('Invalid array length');
          });
        return MEDLINE.toDraft(record, uri);
      },
    };
    const file = `<PubmedArticleSet>${pubmedRecord(1)}${pubmedRecord(2)}</PubmedArticleSet>`;
    const { deadLetters } = await collect(readXml(bytes(file), format, { path: 'm.xml' }));
    expect(deadLetters.map((d) => d.reason)).toEqual([
      'reader fault in PMID 20000001, record 1, line 1, at PubmedArticle/MedlineCitation/Article/Abstract/AbstractText[2]: RangeError: Invalid array length',
      'reader fault in PMID 20000002, record 2, line 2, at PubmedArticle/MedlineCitation/Article/Abstract/AbstractText[2]: RangeError: Invalid array length',
    ]);
  });

  it('no reason begins "unexpected error", whatever was thrown', () => {
    expect(reasonOf(new Error('x')).reason).toBe('reader fault: Error: x');
    expect(reasonOf('y').reason).toBe('reader fault: y');
  });
});

describe('the readers as a whole', () => {
  it('every reader path gives articles for the nested inputs above and no "unexpected error"', async () => {
    const { items } = await collect(
      readMedline(bytes(`<X>${pubmedRecord(5)}<Y>${pubmedRecord(6)}</Y></X>`), { path: 'x.xml' }),
    );
    expect(items.map((i) => (i.kind === 'article' ? i.article.pmid : i.deadLetter.reason))).toEqual([
      '20000005',
      '20000006',
    ]);
  });
});
