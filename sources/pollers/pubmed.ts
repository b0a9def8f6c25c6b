import { z } from 'zod';
import { isDay, PubmedConfig } from '../../schemas/pollers.js';
import type { SourceItem } from '../items.js';
import { MEDLINE, medlineToDraft } from '../medline.js';
import type { XmlFormat } from '../xml-reader.js';
import { apiDeadLetter, parseJson, readXmlBody } from './api-items.js';
import { endpoint, type PollerDeps, resolveDeps, unreadable } from './common.js';
import { decodeCursor, encodeCursor, queryKey } from './cursor.js';
import { addDays, isClosed } from './days.js';
import type { HttpCall, Poller, PollPage } from './types.js';

export const PUBMED_PROCESSOR = 'sources/pubmed';
const EUTILS = 'https://eutils.ncbi.nlm.nih.gov/entrez/eutils/';
/** ESearch lists at most the first 10,000 ids of a search (retstart + retmax). */
const MAX_IDS = 10_000;

export type PubmedOptions = Omit<z.input<typeof PubmedConfig>, 'kind'> &
  PollerDeps & {
    /** Default: env NCBI_API_KEY. Sent as api_key, never logged or shown in errors. */
    apiKey?: string;
  };

/**
 * Position: Entrez-date (EDAT) day `day`, PMIDs above `after` (null: from the day's first).
 * PMIDs rather than an offset, so a record withdrawn from a day between two pages shifts nothing.
 */
const PubmedCursor = z.object({
  v: z.literal(1),
  day: z.string().refine(isDay),
  after: z.string().regex(/^\d+$/).nullable(),
  q: z.string(),
});
type PubmedCursor = z.infer<typeof PubmedCursor>;

/**
 * ESearch's JSON: NCBI answers an outage with 200 and `esearchresult.ERROR` (sometimes beside
 * `count: "0"` and an empty `idlist`, which must not read as an empty day), so the error shape is
 * tried first.
 */
const ESearchReply = z.union([
  z
    .object({ esearchresult: z.object({ ERROR: z.string() }) })
    .transform((r) => ({ error: r.esearchresult.ERROR })),
  z.object({
    esearchresult: z.object({
      count: z.coerce.number().int().min(0),
      idlist: z.array(z.string().regex(/^\d+$/)),
    }),
  }),
]);
/** EFetch's outage shape: 200 with `<eFetchResult><ERROR>…</ERROR></eFetchResult>` instead of records. */
const EFETCH_ERROR = /<eFetchResult>[\s\S]*?<ERROR>([\s\S]*?)<\/ERROR>/;
/** A record's own PMID (MedlineCitation's, the first in the record). */
const RECORD_PMID = /<PMID[^>]*>(\d+)<\/PMID>/;

const byNumber = (a: string, b: string) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
const slash = (day: string) => day.replaceAll('-', '/');

/** efetch output is MEDLINE XML: the existing reader, under this source's name and URL. */
const PUBMED_FORMAT: XmlFormat = {
  processor: PUBMED_PROCESSOR,
  recordsAt: MEDLINE.recordsAt,
  toDraft(record, uri) {
    const draft = medlineToDraft(record, uri);
    if (!draft) return null;
    const sourceUri = draft.pmid ? `https://pubmed.ncbi.nlm.nih.gov/${draft.pmid}/` : uri;
    return { ...draft, source: 'pubmed', sourceUri };
  },
};

/**
 * PubMed through E-utilities: ESearch lists a finished EDAT day's PMIDs (plain id list, no
 * history server: a WebEnv expires, a cursor must not), sorted here so paging does not depend
 * on the server's order; EFetch returns each page as MEDLINE XML.
 */
export function createPubmedPoller(opts: PubmedOptions): Poller {
  // Parsing drops the dependency fields: the config is what a config file could say.
  const config = PubmedConfig.parse({ ...opts, kind: 'pubmed' });
  const apiKey = opts.apiKey ?? process.env.NCBI_API_KEY ?? '';
  const email = config.email ?? process.env.NCBI_EMAIL;
  const settings = { ...config.http, ...(config.http?.contact || !email ? {} : { contact: email }) };
  const { http, log, now } = resolveDeps(settings, opts);
  const base = config.baseUrl ?? EUTILS;
  // NCBI: 3 requests/s per IP without a key, 10 with one.
  const minIntervalMs = Math.ceil(1000 / (config.requestsPerSecond ?? (apiKey ? 10 : 3)));
  const q = queryKey('pubmed', config.query);
  const secretParams: Record<string, string> = apiKey ? { api_key: apiKey } : {};
  let cached: { day: string; q: string; ids: string[]; count: number; url: string } | null = null;

  const url = (path: string, params: Record<string, string>) => {
    const u = endpoint(base, path);
    for (const [k, v] of Object.entries({ ...params, tool: config.tool, ...(email ? { email } : {}) }))
      u.searchParams.set(k, v);
    return u;
  };
  const cursorAt = (day: string, after: string | null): PubmedCursor => ({ v: 1, day, after, q });
  const page = (items: SourceItem[], c: PubmedCursor, wait = false): PollPage => ({
    items,
    cursor: encodeCursor(c),
    done: wait || !isClosed(c.day, now(), config.lagDays),
  });

  /** The day's PMIDs in ascending order; throws UnreadablePage when ESearch's answer cannot be used. */
  async function dayIds(
    day: string,
    call: HttpCall = {},
  ): Promise<{ ids: string[]; count: number; url: string }> {
    if (cached?.day === day && cached.q === q) return cached;
    const search = url('esearch.fcgi', {
      db: 'pubmed',
      term: config.query,
      datetype: 'edat',
      mindate: slash(day),
      maxdate: slash(day),
      retstart: '0',
      retmax: String(MAX_IDS),
      retmode: 'json',
    });
    const res = await http.get(search, { ...call, minIntervalMs, secretParams, accept: 'application/json' });
    const parsed = parseJson(res, ESearchReply);
    if (!parsed.ok) unreadable(parsed.problem);
    const payload = res.body.toString('utf8');
    if ('error' in parsed.value)
      unreadable({ url: res.url, reason: `NCBI ESearch: ${parsed.value.error}`, payload });
    const { count, idlist } = parsed.value.esearchresult;
    const ids = [...new Set(idlist)].sort(byNumber);
    // Fewer ids than matches (within the 10,000 ESearch lists) is a cut listing, not a small day.
    if (ids.length < Math.min(count, MAX_IDS))
      unreadable({
        url: res.url,
        reason: `ESearch counts ${count} matches but lists ${ids.length}`,
        payload,
      });
    cached = { day, q, ids, count, url: res.url };
    return cached;
  }

  /** The cursor as stored, or the first day; a cursor of another query restarts its day. */
  function position(raw: string | null): PubmedCursor {
    const cur = raw === null ? cursorAt(config.since, null) : decodeCursor('pubmed', PubmedCursor, raw);
    if (cur.q === q) return cur;
    // A changed query has a different id list: the day is read again under it (same ids, deduplicated downstream).
    log.warn(
      { poller: 'pubmed', day: cur.day },
      'query changed; re-reading the current day under the new query',
    );
    return cursorAt(cur.day, null);
  }

  /** The page of the day's PMIDs after the cursor's to fetch next, and the cursor past it. */
  const pageOf = (cur: PubmedCursor, ids: string[]) => {
    const after = cur.after;
    const todo = after === null ? ids : ids.filter((id) => byNumber(id, after) > 0);
    const slice = todo.slice(0, config.pageSize);
    const next =
      slice.length === todo.length
        ? cursorAt(addDays(cur.day, 1), null)
        : cursorAt(cur.day, slice[slice.length - 1]!);
    return { slice, next };
  };

  return {
    name: 'pubmed',
    processor: PUBMED_PROCESSOR,
    async poll(raw, call) {
      const cur = position(raw);
      if (!isClosed(cur.day, now(), config.lagDays)) return page([], cur, true);
      const listed = await dayIds(cur.day, call);
      const items: SourceItem[] = [];
      if (cur.after === null && listed.count > listed.ids.length) {
        const reason = `EDAT ${cur.day} has ${listed.count} matches but ESearch lists ${listed.ids.length}: the rest are not read; narrow the query`;
        items.push(apiDeadLetter({ url: listed.url, reason, payload: '' }, PUBMED_PROCESSOR));
      }
      const { slice, next } = pageOf(cur, listed.ids);
      if (slice.length === 0) return page(items, next);
      const res = await http.get(url('efetch.fcgi', { db: 'pubmed', id: slice.join(','), retmode: 'xml' }), {
        ...call,
        minIntervalMs,
        secretParams,
        accept: 'application/xml',
      });
      const body = res.body.toString('utf8');
      const ncbiError = EFETCH_ERROR.exec(body)?.[1]?.trim();
      if (ncbiError !== undefined)
        unreadable({ url: res.url, reason: `NCBI EFetch: ${ncbiError}`, payload: body });
      if (body.trim() === '')
        unreadable({ url: res.url, reason: `empty body (HTTP ${res.status})`, payload: '' });
      const read = await readXmlBody(res, PUBMED_FORMAT);
      // Records before a broken spot were read, but the page is used whole or not at all.
      if (read.fault) unreadable(read.fault);
      if (read.items.length === 0)
        unreadable({
          url: res.url,
          reason: `EFetch returned none of the ${slice.length} PMID(s) asked`,
          payload: body,
        });
      items.push(...read.items);
      // Every PMID asked is accounted for: an article, a dead letter for its unreadable record, or
      // (when fewer records came back than asked) a dead letter saying EFetch did not return it.
      if (read.items.length < slice.length) {
        const returned = new Set(
          read.items.map((i) =>
            i.kind === 'article' ? i.article.pmid : (RECORD_PMID.exec(i.deadLetter.payload)?.[1] ?? null),
          ),
        );
        for (const pmid of slice.filter((id) => !returned.has(id))) {
          const reason = `PMID ${pmid} is listed by ESearch for EDAT ${cur.day} but EFetch returned no record for it`;
          items.push(
            apiDeadLetter({ url: res.url, code: 'api-error', reason, payload: '' }, PUBMED_PROCESSOR),
          );
        }
      }
      return page(items, next);
    },

    async skip(raw, call) {
      const cur = position(raw);
      const rest = `every PMID of EDAT ${cur.day}${cur.after === null ? '' : ` after ${cur.after}`}`;
      // A listing that reads again lets the skip give up one page; one that does not, the rest of the day.
      const listed = await dayIds(cur.day, call).catch(() => null);
      if (!listed) return { cursor: encodeCursor(cursorAt(addDays(cur.day, 1), null)), skipped: rest };
      const { slice, next } = pageOf(cur, listed.ids);
      if (slice.length === 0)
        return { cursor: encodeCursor(next), skipped: `nothing (EDAT ${cur.day} is read)` };
      return { cursor: encodeCursor(next), skipped: `PMIDs ${slice.join(', ')} of EDAT ${cur.day}` };
    },
  };
}
