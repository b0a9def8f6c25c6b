import { z } from 'zod';
import type { MeshHeading } from '../../schemas/article.js';
import { EuropePmcConfig, isDay } from '../../schemas/pollers.js';
import { articleItem, type SourceItem } from '../items.js';
import { type ArticleDraft, finishArticle, parseDate, stripMarkup } from '../normalise.js';
import { apiDeadLetter, parseJson } from './api-items.js';
import { endpoint, type PollerDeps, resolveDeps, unreadable } from './common.js';
import { decodeCursor, encodeCursor, queryKey } from './cursor.js';
import { addDays, isClosed } from './days.js';
import { fetchFullText } from './fulltext.js';
import type { HttpCall, Poller, PollPage } from './types.js';

export const EUROPEPMC_PROCESSOR = 'sources/europepmc';
const REST = 'https://www.ebi.ac.uk/europepmc/webservices/rest/';

export type EuropePmcOptions = Omit<z.input<typeof EuropePmcConfig>, 'kind'> & PollerDeps;

/** Position: day `day`, Solr cursor `mark` ('*' = first page) of the query fixed for that day. */
const EuropePmcCursor = z.object({
  v: z.literal(1),
  day: z.string().refine(isDay),
  mark: z.string().min(1),
  q: z.string(),
});
type EuropePmcCursor = z.infer<typeof EuropePmcCursor>;

const SearchPage = z.object({
  /** Europe PMC echoes the request it answered. */
  request: z.object({ queryString: z.string() }).optional(),
  hitCount: z.coerce.number().int().min(0),
  nextCursorMark: z.string().optional(),
  resultList: z.object({ result: z.array(z.unknown()) }),
});

const YN = z.enum(['Y', 'N']).optional();
const MeshEntry = z.object({
  descriptorName: z.string(),
  majorTopic_YN: YN,
  meshQualifierList: z
    .object({ meshQualifier: z.array(z.object({ qualifierName: z.string(), majorTopic_YN: YN })) })
    .optional(),
});
/** The core-result fields used; the rest of Europe PMC's record is ignored. */
const CoreResult = z.object({
  id: z.string().min(1),
  source: z.string().min(1),
  pmid: z.string().optional(),
  pmcid: z.string().optional(),
  doi: z.string().optional(),
  title: z.string().default(''),
  abstractText: z.string().optional(),
  journalInfo: z.object({ journal: z.object({ title: z.string().optional() }).optional() }).optional(),
  firstPublicationDate: z.string().optional(),
  pubYear: z.string().optional(),
  keywordList: z.object({ keyword: z.array(z.string()) }).optional(),
  meshHeadingList: z.object({ meshHeading: z.array(MeshEntry) }).optional(),
  pubTypeList: z.object({ pubType: z.array(z.string()) }).optional(),
  license: z.string().optional(),
  isOpenAccess: YN,
  inEPMC: YN,
});
type CoreResult = z.infer<typeof CoreResult>;

/** Europe PMC abstracts carry HTML: '<h4>Background</h4>…' becomes the 'Background: …' of MEDLINE. */
function abstractText(html: string | undefined): string {
  if (!html) return '';
  const blocks = html
    .replace(/<h\d[^>]*>([\s\S]*?)<\/h\d>\s*/gi, '\n\n$1: ')
    .replace(/<br\s*\/?>|<\/?p[^>]*>/gi, '\n\n');
  return stripMarkup(blocks);
}

function meshOf(r: CoreResult): MeshHeading[] {
  return (r.meshHeadingList?.meshHeading ?? []).map((h) => {
    const qualifiers = (h.meshQualifierList?.meshQualifier ?? []).map((q) => ({
      ui: null,
      name: q.qualifierName,
      majorTopic: q.majorTopic_YN === 'Y',
    }));
    return {
      descriptorUi: null,
      name: h.descriptorName,
      majorTopic: h.majorTopic_YN === 'Y' || qualifiers.some((q) => q.majorTopic),
      qualifiers,
    };
  });
}

export function coreToDraft(r: CoreResult): ArticleDraft {
  return {
    source: 'europepmc',
    sourceUri: `https://europepmc.org/article/${r.source}/${r.id}`,
    doi: r.doi ?? null,
    pmid: r.pmid ?? (r.source === 'MED' ? r.id : null),
    pmcid: r.pmcid ?? null,
    title: stripMarkup(r.title),
    abstract: abstractText(r.abstractText),
    sections: [],
    keywords: r.keywordList?.keyword ?? [],
    mesh: meshOf(r),
    publicationTypes: r.pubTypeList?.pubType ?? [],
    journal: r.journalInfo?.journal?.title ?? null,
    published: parseDate(r.firstPublicationDate) ?? parseDate(r.pubYear),
    licence: r.license ?? null,
  };
}

/** The full text's draft with what the listing knows better: source, ids it lacks, licence, MeSH. */
function withCore(text: ArticleDraft, core: ArticleDraft): ArticleDraft {
  return {
    ...text,
    source: core.source,
    sourceUri: core.sourceUri ?? text.sourceUri,
    doi: text.doi ?? core.doi,
    pmid: text.pmid ?? core.pmid,
    pmcid: text.pmcid ?? core.pmcid,
    abstract: text.abstract || core.abstract,
    keywords: text.keywords?.length ? text.keywords : core.keywords,
    mesh: core.mesh,
    publicationTypes: core.publicationTypes,
    journal: text.journal ?? core.journal,
    published: core.published ?? text.published,
    licence: core.licence ?? text.licence,
  };
}

/**
 * Europe PMC REST search, one finished day at a time: the query is fixed by (configured query,
 * day), sorted on the day field so Solr's cursorMark order rests on the unique id alone, not on
 * relevance scores that drift as the index grows; cursorMarks are stateless, so a persisted one
 * resumes after a restart. Open-access records in Europe PMC are read from their JATS full text.
 */
export function createEuropePmcPoller(opts: EuropePmcOptions): Poller {
  const config = EuropePmcConfig.parse({ ...opts, kind: 'europepmc' });
  const { http, log, now } = resolveDeps(config.http, opts);
  const base = config.baseUrl ?? REST;
  const minIntervalMs = Math.ceil(1000 / (config.requestsPerSecond ?? 5));
  const q = queryKey('europepmc', config.query, config.dateField);
  const cursorAt = (day: string, mark: string): EuropePmcCursor => ({ v: 1, day, mark, q });
  function position(raw: string | null): EuropePmcCursor {
    const cur = raw === null ? cursorAt(config.since, '*') : decodeCursor('europepmc', EuropePmcCursor, raw);
    if (cur.q === q) return cur;
    // A cursorMark belongs to one query: the day is read again under the new one (same ids, deduplicated downstream).
    log.warn(
      { poller: 'europepmc', day: cur.day },
      'query changed; re-reading the current day under the new query',
    );
    return cursorAt(cur.day, '*');
  }
  const page = (items: SourceItem[], c: EuropePmcCursor, wait = false): PollPage => ({
    items,
    cursor: encodeCursor(c),
    done: wait || !isClosed(c.day, now(), config.lagDays),
  });

  async function toItems(
    result: unknown,
    at: string,
    url: string,
    call: HttpCall = {},
  ): Promise<SourceItem[]> {
    const parsed = CoreResult.safeParse(result);
    if (!parsed.success) {
      const reason = `unexpected result ${at}: ${z.prettifyError(parsed.error)}`;
      return [apiDeadLetter({ url, reason, payload: JSON.stringify(result) }, EUROPEPMC_PROCESSOR)];
    }
    const r = parsed.data;
    const core = coreToDraft(r);
    const items: SourceItem[] = [];
    if (config.fullText && r.pmcid && r.inEPMC === 'Y' && r.isOpenAccess === 'Y') {
      const text = await fetchFullText(http, endpoint(base, `${encodeURIComponent(r.pmcid)}/fullTextXML`), {
        ...call,
        minIntervalMs,
        processor: EUROPEPMC_PROCESSOR,
        patch: (draft) => withCore(draft, core),
      });
      if (text.article) return [text.article];
      items.push(...text.deadLetters);
    }
    const done = finishArticle(core);
    if (done.ok) items.push(articleItem(done.article, `${r.source}:${r.id}`));
    else {
      const reason = `${done.reason} (${r.source}:${r.id})`;
      items.push(apiDeadLetter({ url, reason, payload: JSON.stringify(result) }, EUROPEPMC_PROCESSOR));
    }
    return items;
  }

  return {
    name: 'europepmc',
    processor: EUROPEPMC_PROCESSOR,
    async poll(raw, call) {
      const cur = position(raw);
      if (!isClosed(cur.day, now(), config.lagDays)) return page([], cur, true);
      const nextDay = cursorAt(addDays(cur.day, 1), '*');
      const search = endpoint(base, 'search');
      const query = `(${config.query}) AND ${config.dateField}:[${cur.day} TO ${cur.day}]`;
      const params = {
        query,
        format: 'json',
        resultType: 'core',
        pageSize: String(config.pageSize),
        cursorMark: cur.mark,
        sort: `${config.dateField}_D asc`,
      };
      for (const [k, v] of Object.entries(params)) search.searchParams.set(k, v);
      const res = await http.get(search, { ...call, minIntervalMs, accept: 'application/json' });
      const parsed = parseJson(res, SearchPage);
      if (!parsed.ok) unreadable(parsed.problem);
      const { request, resultList, nextCursorMark } = parsed.value;
      if (request && request.queryString !== query)
        unreadable({
          url: res.url,
          reason: `Europe PMC answered the query '${request.queryString}', not '${query}' as asked: nothing ingested from another result set`,
          payload: res.body.toString('utf8'),
        });
      const items: SourceItem[] = [];
      for (const [i, result] of resultList.result.entries()) {
        const at = `${i + 1} of the page at cursorMark ${cur.mark} of ${cur.day}`;
        items.push(...(await toItems(result, at, res.url, call)));
      }
      // Solr's cursor stops moving (or the list is empty) once the day's results are all read.
      const finished = resultList.result.length === 0 || !nextCursorMark || nextCursorMark === cur.mark;
      return page(items, finished ? nextDay : cursorAt(cur.day, nextCursorMark));
    },

    async skip(raw) {
      // The next cursorMark comes only with the page that cannot be read: the rest of the day goes.
      const cur = position(raw);
      return {
        cursor: encodeCursor(cursorAt(addDays(cur.day, 1), '*')),
        skipped: `the rest of ${config.dateField} ${cur.day} (from cursorMark ${cur.mark})`,
      };
    },
  };
}
