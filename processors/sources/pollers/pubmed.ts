import { z } from 'zod';
import { isDay, PubmedConfig } from '../../../schemas/pollers.js';
import type { SourceItem } from '../items.js';
import { MEDLINE, medlineToDraft } from '../medline.js';
import type { XmlFormat } from '../xml-reader.js';
import { apiDeadLetter, type Parsed, parseJson, readXmlBody } from './api-items.js';
import { badPage, endpoint, type PollerDeps, resolveDeps } from './common.js';
import { decodeCursor, encodeCursor, queryKey } from './cursor.js';
import { addDays, isClosed } from './days.js';
import type { Poller, PollPage } from './types.js';

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
  failures: z.number().int().min(0),
});
type PubmedCursor = z.infer<typeof PubmedCursor>;

const ESearchResult = z.object({
  esearchresult: z.object({
    count: z.coerce.number().int().min(0),
    idlist: z.array(z.string().regex(/^\d+$/)),
  }),
});

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
  const cursorAt = (day: string, after: string | null, failures = 0): PubmedCursor => ({
    v: 1,
    day,
    after,
    q,
    failures,
  });
  const page = (items: SourceItem[], c: PubmedCursor, wait = false): PollPage => ({
    items,
    cursor: encodeCursor(c),
    done: wait || !isClosed(c.day, now(), config.lagDays),
  });

  async function dayIds(
    day: string,
    signal?: AbortSignal,
  ): Promise<Parsed<{ ids: string[]; count: number; url: string }>> {
    if (cached?.day === day && cached.q === q) return { ok: true, value: cached };
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
    const res = await http.get(search, {
      minIntervalMs,
      secretParams,
      accept: 'application/json',
      ...(signal ? { signal } : {}),
    });
    const parsed = parseJson(res, ESearchResult);
    if (!parsed.ok) return parsed;
    const ids = [...new Set(parsed.value.esearchresult.idlist)].sort(byNumber);
    cached = { day, q, ids, count: parsed.value.esearchresult.count, url: res.url };
    return { ok: true, value: cached };
  }

  return {
    name: 'pubmed',
    async poll(raw, signal) {
      let cur = raw === null ? cursorAt(config.since, null) : decodeCursor('pubmed', PubmedCursor, raw);
      if (cur.q !== q) {
        // A changed query has a different id list: the day is read again under it (same ids, deduplicated downstream).
        log.warn(
          { poller: 'pubmed', day: cur.day },
          'query changed; re-reading the current day under the new query',
        );
        cur = cursorAt(cur.day, null);
      }
      if (!isClosed(cur.day, now(), config.lagDays)) return page([], cur, true);
      const nextDay = cursorAt(addDays(cur.day, 1), null);
      const listed = await dayIds(cur.day, signal);
      if (!listed.ok) {
        const bad = badPage({
          problem: listed.problem,
          failures: cur.failures,
          maxFailures: config.maxPageFailures,
          skipped: `every PMID of EDAT ${cur.day}`,
          retry: (failures) => ({ ...cur, failures }),
          skip: () => nextDay,
          processor: PUBMED_PROCESSOR,
          log,
        });
        return page(bad.items, bad.cursor, !bad.gaveUp);
      }
      const { ids, count } = listed.value;
      const items: SourceItem[] = [];
      if (cur.after === null && count > ids.length) {
        const reason = `EDAT ${cur.day} has ${count} matches but ESearch lists ${ids.length}: the rest are not read; narrow the query`;
        items.push(apiDeadLetter({ url: listed.value.url, reason, payload: '' }, PUBMED_PROCESSOR));
      }
      const after = cur.after;
      const todo = after === null ? ids : ids.filter((id) => byNumber(id, after) > 0);
      const slice = todo.slice(0, config.pageSize);
      if (slice.length === 0) return page(items, nextDay);
      const last = slice[slice.length - 1]!;
      const advanced = slice.length === todo.length ? nextDay : cursorAt(cur.day, last);
      const res = await http.get(url('efetch.fcgi', { db: 'pubmed', id: slice.join(','), retmode: 'xml' }), {
        minIntervalMs,
        secretParams,
        accept: 'application/xml',
        ...(signal ? { signal } : {}),
      });
      const read = await readXmlBody(res, PUBMED_FORMAT);
      if (read.fault) {
        const bad = badPage({
          problem: read.fault,
          failures: cur.failures,
          maxFailures: config.maxPageFailures,
          skipped: `PMIDs ${slice.join(', ')} unless read before the fault`,
          retry: (failures) => ({ ...cur, failures }),
          skip: () => advanced,
          processor: PUBMED_PROCESSOR,
          log,
        });
        return bad.gaveUp
          ? page([...items, ...read.items, ...bad.items], bad.cursor)
          : page([], bad.cursor, true);
      }
      return page([...items, ...read.items], advanced);
    },
  };
}
