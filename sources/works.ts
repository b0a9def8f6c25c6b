import type { Article, WorkLink, WorkRecord } from '../schemas/article.js';
import { contentHash, normaliseDoi } from '../schemas/ids.js';
import type { StateStore } from '../topology/processor.js';
import { dedupKeys, mergeArticles } from './dedup.js';
import { normaliseText, signature, similarity } from './minhash.js';

/**
 * One work, many records: the same paper as a preprint and as its journal version, as PMC full
 * text beside its MEDLINE abstract, or the same abstract under two ids. Ingest links a record to
 * the work it belongs to, by (in this order) a shared id, a relation its source declares, the
 * exact text of its abstract, or a near-identical abstract (MinHash); the work keeps the id it
 * first got, so everything downstream (QA ids, topic counts, the mix, held-out rules) counts works.
 */

/** An abstract shorter than this (in words) is no fingerprint: "No abstract available" is not a work. */
const FINGERPRINT_WORDS = 40;
/**
 * Estimated Jaccard similarity of 3-word shingles at which two abstracts are one text. A preprint
 * and its published version with one sentence of five reworded share about 0.85, estimated from
 * 64 hashes as 0.73 to 0.89; two different abstracts, even on one topic, share under 0.1.
 */
const NEAR_TEXT = 0.6;
const BANDS = 16;
const ROWS = 4;
/** Most works one abstract band keeps: a check costs at most BANDS × BAND_WORKS reads. */
const BAND_WORKS = 16;

/**
 * Versioned DOIs of the same work: bioRxiv/medRxiv `…v2`, eLife's reviewed preprints
 * `10.7554/elife.88888.2`, Research Square and Preprints.org `….v1`. The version goes.
 */
const VERSIONED_DOI: readonly RegExp[] = [
  /^(10\.1101\/.+?)v\d+$/,
  /^(10\.7554\/elife\.\d+)\.\d+$/,
  /^(10\.21203\/rs\.\d\.rs-\d+)\/v\d+$/,
  /^(10\.20944\/preprints\d+\.\d+)\.v\d+$/,
];

/** A written id as an article id: `10.1/x` or a DOI URL, a PMID, `PMC123`; null for anything else. */
export function articleIdOf(raw: string): string | null {
  const v = raw.trim();
  if (/^(https?:\/\/(dx\.)?doi\.org\/|doi:\s*)?10\.\S+\/\S+$/i.test(v)) return `doi:${normaliseDoi(v)}`;
  if (/^\d{1,9}$/.test(v)) return `pmid:${v}`;
  if (/^PMC\d+$/i.test(v)) return `pmcid:${v.toUpperCase()}`;
  return null;
}

/** A DOI key without its version, or the key itself. */
export function unversioned(key: string): string {
  if (!key.startsWith('doi:')) return key;
  const doi = normaliseDoi(key.slice(4));
  for (const re of VERSIONED_DOI) {
    const m = doi.match(re);
    if (m) return `doi:${m[1]}`;
  }
  return `doi:${doi}`;
}

/** Every id key of the work: its records' ids and its own DOI/PMID/PMCID, versions folded. */
export function workIds(
  article: Pick<Article, 'doi' | 'pmid' | 'pmcid' | 'contentHash' | 'records'>,
): string[] {
  return [...new Set([...dedupKeys(article), ...article.records.map((r) => r.id)].map(unversioned))];
}

/** The abstract as a fingerprint: null when it is too short to tell works apart. */
function fingerprintText(article: Pick<Article, 'abstract'>): string | null {
  const text = normaliseText(article.abstract);
  return text.split(' ').length >= FINGERPRINT_WORDS ? text : null;
}

/** The key of a text extract made passages from: abstract or one section. */
export function sentTextKey(text: string): string {
  return `t:${contentHash(text)}`;
}

/** The texts of a record, as extract will read them: what a later record of the work need not carry again. */
function sentTexts(article: Pick<Article, 'abstract' | 'sections'>): string[] {
  return [article.abstract, ...article.sections.map((s) => s.text)].filter(Boolean).map(sentTextKey);
}

/** The work a record belongs to, how it was found, and the other works its keys point at. */
export interface Found {
  readonly work: Article;
  readonly link: WorkLink;
  /** Works other keys of the record name: a conflict, logged, never merged. */
  readonly conflicts: { readonly workId: string; readonly link: WorkLink }[];
}

/**
 * The works seen so far, over ingest's stores: `articles` (work id -> the work) and
 * `article-keys` (id keys, `related:` ids its records declare, `text:` hashes -> work id; `abstract-band:` -> work ids;
 * `abstract-sig:<work id>` -> the abstract's signature).
 */
export class WorkIndex {
  constructor(
    private readonly works: StateStore,
    private readonly keys: StateStore,
  ) {}

  find(record: Article): Found | null {
    const named: { workId: string; link: WorkLink }[] = [];
    const add = (workId: string | undefined, link: WorkLink) => {
      if (workId !== undefined && !named.some((n) => n.workId === workId)) named.push({ workId, link });
    };
    const ids = workIds({ ...record, records: [] });
    for (const k of ids) add(this.keys.get<string>(k), 'id');
    // Another record of a work declared this one (keys under `related:`), or this one declares it.
    for (const k of ids) add(this.keys.get<string>(`related:${k}`), 'relation');
    for (const k of record.relatedIds) add(this.keys.get<string>(unversioned(k)), 'relation');
    const text = fingerprintText(record);
    if (text !== null) {
      add(this.keys.get<string>(`text:${contentHash(text)}`), 'text');
      const near = this.nearest(signature(text));
      if (near) add(near, 'near-text');
    }
    const [first, ...rest] = named;
    const work = first && this.works.get<Article>(first.workId);
    if (!first || !work) return null;
    return { work, link: first.link, conflicts: rest };
  }

  /** Stores the work and points every key of it at its id; a key another work holds stays that work's. */
  put(work: Article): void {
    this.works.put(work.id, work);
    const claim = (key: string) => {
      if (this.keys.get<string>(key) === undefined) this.keys.put(key, work.id);
    };
    for (const k of workIds(work)) claim(k);
    for (const k of work.relatedIds) claim(`related:${unversioned(k)}`);
    const text = fingerprintText(work);
    if (text === null) return;
    claim(`text:${contentHash(text)}`);
    const sig = signature(text);
    this.keys.put(`abstract-sig:${work.id}`, sig);
    for (const band of abstractBands(sig)) {
      const ids = this.keys.get<string[]>(band) ?? [];
      if (!ids.includes(work.id)) this.keys.put(band, [...ids, work.id].slice(-BAND_WORKS));
    }
  }

  private nearest(sig: readonly number[]): string | null {
    let best: { id: string; s: number } | null = null;
    for (const band of abstractBands(sig))
      for (const id of this.keys.get<string[]>(band) ?? []) {
        const other = this.keys.get<number[]>(`abstract-sig:${id}`);
        const s = other ? similarity(sig, other) : 0;
        if (s >= NEAR_TEXT && (!best || s > best.s)) best = { id, s };
      }
    return best?.id ?? null;
  }
}

function abstractBands(sig: readonly number[]): string[] {
  return Array.from(
    { length: BANDS },
    (_, b) => `abstract-band:${b}:${sig.slice(b * ROWS, (b + 1) * ROWS).join('.')}`,
  );
}

/**
 * The work with a record linked into it: the text of the fuller or later one (mergeArticles), the
 * work's id, every record's id and source, the relations of both, and the texts extract has
 * already had, so the update is not extracted again where its text did not change.
 */
export function linkRecord(work: Article, record: Article, link: WorkLink): Article {
  const merged = mergeArticles(work, record);
  const records: WorkRecord[] = work.records.length
    ? [...work.records]
    : [{ id: work.id, source: work.source, link: 'first' }];
  if (!records.some((r) => r.id === record.id)) records.push({ id: record.id, source: record.source, link });
  return {
    ...merged,
    id: work.id,
    relatedIds: [...new Set([...work.relatedIds, ...record.relatedIds])],
    // A work of one record lists none: its id and source say it all.
    records: records.length > 1 ? records : [],
    textSentBefore: [...new Set([...work.textSentBefore, ...sentTexts(work)])],
  };
}

/** Whether linking changed the work in anything but what extract already had. */
export function changed(before: Article, after: Article): boolean {
  return JSON.stringify({ ...after, textSentBefore: before.textSentBefore }) !== JSON.stringify(before);
}
