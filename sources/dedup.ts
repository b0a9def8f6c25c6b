import type { Article, MeshHeading } from '../schemas/article.js';
import { articleId, normaliseDoi } from '../schemas/ids.js';
import { finishArticle, normalisePmcid } from './normalise.js';

/**
 * Cross-source deduplication. The same paper arrives as JATS full text from PMC, as a MEDLINE
 * record and perhaps as S2ORC: they share a DOI, or failing that a PMID or PMCID.
 */

/** The key a dedup index stores an article under: its id, DOI > PMID > PMCID > content hash. */
export function dedupKey(article: Pick<Article, 'doi' | 'pmid' | 'pmcid' | 'contentHash'>): string {
  return articleId(article);
}

/**
 * Every key the article can be found by. A MEDLINE record without a DOI (id pmid:…) and the
 * JATS copy with one (id doi:…) have different ids but share 'pmid:…' here: an index that looks
 * up all of these finds the pair.
 */
export function dedupKeys(article: Pick<Article, 'doi' | 'pmid' | 'pmcid' | 'contentHash'>): string[] {
  const keys: string[] = [];
  if (article.doi) keys.push(`doi:${normaliseDoi(article.doi)}`);
  if (article.pmid) keys.push(`pmid:${article.pmid.trim()}`);
  const pmcid = normalisePmcid(article.pmcid);
  if (pmcid) keys.push(`pmcid:${pmcid}`);
  if (keys.length === 0) keys.push(`sha256:${article.contentHash}`);
  return keys;
}

export function sameArticle(a: Article, b: Article): boolean {
  const keys = new Set(dedupKeys(a));
  return dedupKeys(b).some((k) => keys.has(k));
}

const textLength = (a: Article) => a.abstract.length + a.sections.reduce((n, s) => n + s.text.length, 0);

/**
 * Orders two records richest first: full text (sections) beats abstract only, then the later
 * publication (a journal version over its preprint), then more text, then a fixed tie-break on
 * the content hash and source so merge(a, b) equals merge(b, a).
 */
function richerFirst(a: Article, b: Article): [Article, Article] {
  const score = (x: Article) => [x.sections.length > 0 ? 1 : 0, textLength(x)] as const;
  const [sa, sb] = [score(a), score(b)];
  if (sa[0] !== sb[0]) return sa[0] > sb[0] ? [a, b] : [b, a];
  if (a.published && b.published && a.published !== b.published)
    return a.published > b.published ? [a, b] : [b, a];
  if (sa[1] !== sb[1]) return sa[1] > sb[1] ? [a, b] : [b, a];
  const ka = `${a.contentHash}\u0000${a.source}`;
  const kb = `${b.contentHash}\u0000${b.source}`;
  return ka <= kb ? [a, b] : [b, a];
}

function union(a: readonly string[], b: readonly string[]): string[] {
  const seen = new Set(a.map((x) => x.toLowerCase()));
  return [...a, ...b.filter((x) => !seen.has(x.toLowerCase()))];
}

function mergeMesh(a: readonly MeshHeading[], b: readonly MeshHeading[]): MeshHeading[] {
  // MeSH comes from MEDLINE; when both have headings (two MEDLINE copies), the longer list wins whole.
  return [...(a.length >= b.length ? a : b)];
}

/**
 * Merges two records of the same paper: the text (title, abstract, sections, captions) of the
 * richer one, identifiers and metadata filled from either, MeSH headings from whichever has
 * them (MEDLINE), keywords and publication types from both. Pure and symmetric; the result's
 * id is recomputed, so a DOI learnt from one copy becomes the merged id.
 */
export function mergeArticles(a: Article, b: Article): Article {
  const [rich, poor] = richerFirst(a, b);
  const sources = [...new Set([...rich.source.split('+'), ...poor.source.split('+')])].sort().join('+');
  const done = finishArticle({
    source: sources,
    ...((rich.sourceUri ?? poor.sourceUri) ? { sourceUri: rich.sourceUri ?? poor.sourceUri } : {}),
    doi: rich.doi ?? poor.doi,
    pmid: rich.pmid ?? poor.pmid,
    pmcid: rich.pmcid ?? poor.pmcid,
    title: rich.title || poor.title,
    abstract: rich.abstract || poor.abstract,
    sections: rich.sections,
    captions: rich.captions.length ? rich.captions : poor.captions,
    keywords: union(rich.keywords, poor.keywords),
    mesh: mergeMesh(rich.mesh, poor.mesh),
    publicationTypes: union(rich.publicationTypes, poor.publicationTypes),
    journal: rich.journal ?? poor.journal,
    published: rich.published ?? poor.published,
    licence: rich.licence ?? poor.licence,
  });
  // Both inputs had text, so the merge has text; anything else is a bug worth surfacing.
  if (!done.ok) throw new Error(`mergeArticles: ${done.reason}`);
  return done.article;
}
