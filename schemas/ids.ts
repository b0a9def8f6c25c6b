import { createHash } from 'node:crypto';

/**
 * Deterministic ids: a replay of the same content yields the same id, so every sink can
 * deduplicate by id. Parts are length-prefixed so ("ab","c") and ("a","bc") differ.
 */
export function contentHash(...parts: readonly (string | number | null | undefined)[]): string {
  const h = createHash('sha256');
  for (const p of parts) {
    const s = p == null ? '' : String(p);
    h.update(`${Buffer.byteLength(s)}:`);
    h.update(s);
  }
  return h.digest('hex').slice(0, 32);
}

export function normaliseDoi(doi: string): string {
  return doi
    .trim()
    .replace(/^https?:\/\/(dx\.)?doi\.org\//i, '')
    .replace(/^doi:\s*/i, '')
    .toLowerCase();
}

/** Article id: DOI > PMID > PMCID > content hash (DESIGN.md, Records). */
export function articleId(ids: {
  doi?: string | null;
  pmid?: string | null;
  pmcid?: string | null;
  contentHash: string;
}): string {
  if (ids.doi) return `doi:${normaliseDoi(ids.doi)}`;
  if (ids.pmid) return `pmid:${ids.pmid.trim()}`;
  if (ids.pmcid)
    return `pmcid:${ids.pmcid
      .trim()
      .toUpperCase()
      .replace(/^(PMC)?/, 'PMC')}`;
  return `sha256:${ids.contentHash}`;
}
