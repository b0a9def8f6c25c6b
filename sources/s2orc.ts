import type { Section } from '../schemas/article.js';
import { HeadingPath } from './headings.js';

/**
 * The Semantic Scholar datasets-API full text: one string plus span annotations, each a JSON
 * string (sometimes already an array) of {start, end, attributes?}. Sections come from
 * 'sectionheader' spans, nested by their numbering ('2.1' under '2') into 'Parent / Child'
 * headings like the JATS reader's; paragraphs go to the last header before them.
 */
interface Span {
  start: number;
  end: number;
  attributes?: Record<string, unknown>;
}

function spans(annotations: Record<string, unknown>, name: string): Span[] {
  let v = annotations[name];
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      return [];
    }
  }
  if (!Array.isArray(v)) return [];
  return v
    .filter(
      (s): s is Span =>
        typeof s === 'object' &&
        s !== null &&
        Number.isInteger(s.start) &&
        Number.isInteger(s.end) &&
        s.end > s.start,
    )
    .sort((a, b) => a.start - b.start);
}

export function fromAnnotated(
  text: string,
  annotations: Record<string, unknown>,
): { title: string; abstract: string; sections: Section[] } {
  const slice = (s: Span) => text.slice(s.start, s.end).trim();
  const title = spans(annotations, 'title').map(slice)[0] ?? '';
  const abstractSpans = spans(annotations, 'abstract');
  const abstract = abstractSpans.map(slice).join('\n\n');
  const inAbstract = (p: Span) => abstractSpans.some((a) => p.start >= a.start && p.end <= a.end);
  type Mark = { at: number; header?: { title: string; n: string | null }; paragraph?: string };
  const marks: Mark[] = [
    ...spans(annotations, 'sectionheader').map((s) => ({
      at: s.start,
      header: {
        title: slice(s),
        n: typeof s.attributes?.n === 'string' ? s.attributes.n.replace(/\.$/, '') : null,
      },
    })),
    ...spans(annotations, 'paragraph')
      .filter((p) => !inAbstract(p))
      .map((p) => ({ at: p.start, paragraph: slice(p) })),
  ].sort((a, b) => a.at - b.at);

  const sections: Section[] = [];
  const paths = new HeadingPath();
  let heading = '';
  let pending: string[] = [];
  const flush = () => {
    if (pending.length) sections.push({ heading, text: pending.join('\n\n') });
    pending = [];
  };
  for (const m of marks) {
    if (m.header) {
      flush();
      heading = paths.headingFor(m.header.title, m.header.n);
    } else if (m.paragraph) pending.push(m.paragraph);
  }
  flush();
  return { title, abstract, sections };
}
