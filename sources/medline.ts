import type { MeshHeading } from '../schemas/article.js';
import type { ByteSource } from './bytes.js';
import { SourceError, type SourceItem } from './items.js';
import { type ArticleDraft, cleanInline, parseDate, partialDate } from './normalise.js';
import { child, childElements, first, rawText, select, type XmlElement } from './xml.js';
import { readXml, type XmlFormat, type XmlReaderOptions } from './xml-reader.js';
import { inlineText, tidy } from './xml-text.js';

/**
 * PubMed / MEDLINE XML of every vintage (baseline and update files, E-utilities efetch output,
 * exports): PubmedArticle, PubmedBookArticle and MedlineCitation records are found by name
 * wherever they sit: under a PubmedArticleSet, a pre-2017 MedlineCitationSet, any wrapper element
 * an export put around them, or alone at the root. Streamed: only one record is ever held in
 * memory, so a 100 MB baseline file costs a few MB.
 * DeleteCitation blocks in update files are instructions, not articles, and are skipped. A
 * citation with a title but no abstract is an article (its MeSH headings count); one with neither
 * is a 'no text' dead letter.
 */
export const MEDLINE_PROCESSOR = 'sources/medline';

/** Plain text of an element; most hold a single run of text and need no markup walk. */
function text(el: XmlElement | undefined): string {
  if (!el) return '';
  const only = el.children.length === 1 ? el.children[0] : undefined;
  return typeof only === 'string' ? cleanInline(only) : cleanInline(tidy(inlineText(el)));
}

const yes = (v: string | undefined) => v === 'Y';

/**
 * MeSH headings with descriptor UIs. majorTopic follows PubMed's [MAJR] meaning: the descriptor is
 * a major topic when it, or any of its qualifiers, is starred; each qualifier keeps its own flag.
 */
function meshHeadings(citation: XmlElement): MeshHeading[] {
  return select(citation, 'MeshHeadingList/MeshHeading').flatMap((h) => {
    const d = child(h, 'DescriptorName');
    const name = text(d);
    if (!d || !name) return [];
    // Older DTDs call a qualifier <SubHeading>; both may lack the UI attribute (kept as null).
    const qualifierEls = childElements(h).filter(
      (q) => q.name === 'QualifierName' || q.name === 'SubHeading',
    );
    const qualifiers = qualifierEls.map((q) => ({
      ui: q.attrs.UI ?? null,
      name: text(q),
      majorTopic: yes(q.attrs.MajorTopicYN),
    }));
    return [
      {
        descriptorUi: d.attrs.UI ?? null,
        name,
        majorTopic: yes(d.attrs.MajorTopicYN) || qualifiers.some((q) => q.majorTopic),
        qualifiers,
      },
    ];
  });
}

/** Labelled parts of a structured abstract read 'LABEL: text', one paragraph each. */
function abstractOf(abs: XmlElement | undefined): string {
  return childElements(abs ?? { name: '', attrs: {}, children: [] }, 'AbstractText')
    .map((t) => {
      const body = text(t);
      const label = t.attrs.Label?.trim();
      return label && body ? `${label}: ${body}` : body;
    })
    .filter(Boolean)
    .join('\n\n');
}

/** PubDate as YYYY[-MM[-DD]]; a MedlineDate ('1998 Dec-1999 Jan', '2000 Spring') keeps what it can. */
function pubDate(d: XmlElement | undefined): string | null {
  if (!d) return null;
  const medlineDate = child(d, 'MedlineDate');
  if (medlineDate) {
    const v = rawText(medlineDate).trim();
    // A range starts where it starts: '1998 Dec-1999 Jan' is 1998-12, '1998 Dec 15-21' is 1998-12-15.
    const m = /^(\d{4})\s+([A-Za-z]{3,})\.?(?:\s+(\d{1,2}))?(?!\d)/.exec(v);
    return (m ? partialDate(m[1], m[2], m[3]) : null) ?? parseDate(v);
  }
  return partialDate(
    rawText(child(d, 'Year')),
    rawText(child(d, 'Month')) || rawText(child(d, 'Season')),
    rawText(child(d, 'Day')),
  );
}

/** An abstract from another source (PIP, KIE, a translation): the English one first, else the first with text. */
function otherAbstract(citation: XmlElement): string {
  const all = childElements(citation, 'OtherAbstract');
  const english = all.filter((a) => (a.attrs.Language ?? 'eng') === 'eng');
  for (const a of [...english, ...all]) {
    const t = abstractOf(a);
    if (t) return t;
  }
  return '';
}

function ids(record: XmlElement, citation: XmlElement, article: XmlElement | undefined) {
  const articleIds = select(record, 'PubmedData/ArticleIdList/ArticleId');
  const idOf = (type: string) => articleIds.find((a) => a.attrs.IdType === type);
  const eloc = select(article, 'ELocationID').find(
    (e) => e.attrs.EIdType === 'doi' && e.attrs.ValidYN !== 'N',
  );
  return {
    pmid: rawText(child(citation, 'PMID')).trim() || rawText(idOf('pubmed')).trim() || null,
    doi: rawText(eloc).trim() || rawText(idOf('doi')).trim() || null,
    pmcid: rawText(idOf('pmc')).trim() || null,
  };
}

function citationToDraft(record: XmlElement, citation: XmlElement, sourceUri?: string): ArticleDraft {
  const article = child(citation, 'Article');
  const journalEl = child(article, 'Journal');
  const abstract = abstractOf(child(article, 'Abstract')) || otherAbstract(citation);
  const published =
    pubDate(first(journalEl, 'JournalIssue/PubDate')) ??
    (() => {
      const d = select(article, 'ArticleDate')[0];
      return d
        ? partialDate(rawText(child(d, 'Year')), rawText(child(d, 'Month')), rawText(child(d, 'Day')))
        : null;
    })();
  return {
    source: 'medline',
    ...(sourceUri ? { sourceUri } : {}),
    ...ids(record, citation, article),
    title: text(child(article, 'ArticleTitle')) || text(child(article, 'VernacularTitle')),
    abstract,
    sections: [],
    captions: [],
    keywords: select(citation, 'KeywordList/Keyword').map(text),
    mesh: meshHeadings(citation),
    // Older DTDs put PublicationType straight under Article.
    publicationTypes: [
      ...select(article, 'PublicationTypeList/PublicationType'),
      ...(article ? childElements(article, 'PublicationType') : []),
    ].map(text),
    journal: text(child(journalEl, 'Title')) || text(first(citation, 'MedlineJournalInfo/MedlineTA')) || null,
    published,
    licence: null,
  };
}

function bookToDraft(record: XmlElement, sourceUri?: string): ArticleDraft {
  const doc = child(record, 'BookDocument');
  const book = child(doc, 'Book');
  const idOf = (type: string) =>
    select(record, 'PubmedBookData/ArticleIdList/ArticleId').find((a) => a.attrs.IdType === type);
  return {
    source: 'medline',
    ...(sourceUri ? { sourceUri } : {}),
    doi: rawText(idOf('doi')).trim() || null,
    pmid: rawText(child(doc, 'PMID')).trim() || null,
    pmcid: null,
    title: text(child(doc, 'ArticleTitle')) || text(child(book, 'BookTitle')),
    abstract: abstractOf(child(doc, 'Abstract')),
    sections: [],
    mesh: meshHeadings(doc ?? record),
    keywords: select(doc, 'KeywordList/Keyword').map(text),
    publicationTypes: select(doc, 'PublicationType').map(text),
    journal: text(child(book, 'BookTitle')) || null,
    published: pubDate(child(book, 'PubDate')),
    licence: null,
  };
}

/** One PubmedArticle / MedlineCitation / PubmedBookArticle element as a draft; null for non-articles. */
export function medlineToDraft(record: XmlElement, sourceUri?: string): ArticleDraft | null {
  switch (record.name) {
    case 'PubmedArticle': {
      const citation = child(record, 'MedlineCitation');
      if (!citation) throw new SourceError('malformed', 'PubmedArticle without MedlineCitation');
      return citationToDraft(record, citation, sourceUri);
    }
    case 'MedlineCitation':
      return citationToDraft(record, record, sourceUri);
    case 'PubmedBookArticle':
      return bookToDraft(record, sourceUri);
    case 'DeleteCitation':
    case 'DeleteDocument':
      return null;
    default:
      throw new SourceError('malformed', `unexpected <${record.name}> in a MEDLINE file`);
  }
}

/** How a fault names a MEDLINE record: its PMID. */
export function medlineRecordLabel(record: XmlElement): string | null {
  const pmid =
    child(record, 'PMID') ?? first(record, 'MedlineCitation/PMID') ?? first(record, 'BookDocument/PMID');
  const v = rawText(pmid).trim();
  return v ? `PMID ${v}` : null;
}

export const MEDLINE: XmlFormat = {
  processor: MEDLINE_PROCESSOR,
  // Update files' deletions are records too (read as nothing), so a deletions-only file is not "no records".
  recordsAt: new Set([
    'PubmedArticle',
    'PubmedBookArticle',
    'MedlineCitation',
    'DeleteCitation',
    'DeleteDocument',
  ]),
  toDraft: medlineToDraft,
  recordLabel: medlineRecordLabel,
};

/** Streams a PubMed/MEDLINE XML file (plain or gzipped), one item per record. Never throws. */
export function readMedline(src: ByteSource, opts: XmlReaderOptions = {}): AsyncGenerator<SourceItem> {
  return readXml(src, MEDLINE, opts);
}
