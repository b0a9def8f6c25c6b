import { z } from 'zod';
import { BiorxivConfig, isDay } from '../../../schemas/pollers.js';
import { articleItem, type SourceItem } from '../items.js';
import { type ArticleDraft, finishArticle, parseDate, stripMarkup } from '../normalise.js';
import { apiDeadLetter, parseJson } from './api-items.js';
import { badPage, endpoint, type PollerDeps, resolveDeps } from './common.js';
import { decodeCursor, encodeCursor, queryKey } from './cursor.js';
import { addDays, isClosed } from './days.js';
import { fetchFullText } from './fulltext.js';
import type { Poller, PollPage } from './types.js';

export const BIORXIV_PROCESSOR = 'sources/biorxiv';
const API = 'https://api.biorxiv.org/';
/** The details endpoint serves 100 records a call, whatever is asked: an unreadable page skips this many. */
const SERVER_PAGE = 100;

export type BiorxivOptions = Omit<z.input<typeof BiorxivConfig>, 'kind'> & PollerDeps;

/** Position: posting day `day`, record `offset` of the server's list for that day. */
const BiorxivCursor = z.object({
  v: z.literal(1),
  day: z.string().refine(isDay),
  offset: z.number().int().min(0),
  q: z.string(),
  failures: z.number().int().min(0),
});
type BiorxivCursor = z.infer<typeof BiorxivCursor>;

const Message = z.object({
  status: z.string(),
  cursor: z.coerce.number().int().optional(),
  count: z.coerce.number().int().optional(),
  total: z.coerce.number().int().optional(),
});
const DetailsPage = z.object({
  messages: z.array(Message).min(1),
  collection: z.array(z.unknown()).default([]),
});
const Entry = z.object({
  doi: z.string().min(1),
  title: z.string(),
  date: z.string(),
  version: z.coerce.string(),
  type: z.string().optional(),
  license: z.string().optional(),
  category: z.string().optional(),
  abstract: z.string().default(''),
  jatsxml: z.url().optional(),
});
type Entry = z.infer<typeof Entry>;

const JOURNAL = { biorxiv: 'bioRxiv', medrxiv: 'medRxiv' } as const;

export function entryToDraft(e: Entry, server: 'biorxiv' | 'medrxiv'): ArticleDraft {
  return {
    source: server,
    sourceUri: `https://www.${server}.org/content/${e.doi}v${e.version}`,
    doi: e.doi,
    pmid: null,
    pmcid: null,
    title: stripMarkup(e.title),
    abstract: stripMarkup(e.abstract),
    sections: [],
    // The subject category is the only topical label a preprint has.
    keywords: e.category ? [e.category] : [],
    publicationTypes: ['preprint'],
    journal: JOURNAL[server],
    published: parseDate(e.date),
    licence: e.license ?? null,
  };
}

/**
 * bioRxiv / medRxiv details API, one finished posting day at a time, paged by the server's
 * numeric cursor. Every version of a preprint is a record of the day it was posted, so a revised
 * preprint comes again, under the same DOI and so the same article id.
 */
export function createBiorxivPoller(opts: BiorxivOptions): Poller {
  const config = BiorxivConfig.parse({ ...opts, kind: 'biorxiv' });
  const { http, log, now } = resolveDeps(config.http, opts);
  const base = config.baseUrl ?? API;
  const minIntervalMs = Math.ceil(1000 / (config.requestsPerSecond ?? 2));
  const name = config.server;
  const q = queryKey(name, config.category ?? '');
  const cursorAt = (day: string, offset: number, failures = 0): BiorxivCursor => ({
    v: 1,
    day,
    offset,
    q,
    failures,
  });
  const page = (items: SourceItem[], c: BiorxivCursor, wait = false): PollPage => ({
    items,
    cursor: encodeCursor(c),
    done: wait || !isClosed(c.day, now(), config.lagDays),
  });

  async function toItems(raw: unknown, at: string, url: string, signal?: AbortSignal): Promise<SourceItem[]> {
    const parsed = Entry.safeParse(raw);
    if (!parsed.success) {
      const reason = `unexpected record ${at}: ${z.prettifyError(parsed.error)}`;
      return [apiDeadLetter({ url, reason, payload: JSON.stringify(raw) }, BIORXIV_PROCESSOR)];
    }
    const entry = parsed.data;
    const draft = entryToDraft(entry, config.server);
    const items: SourceItem[] = [];
    if (config.fullText && entry.jatsxml) {
      const text = await fetchFullText(http, new URL(entry.jatsxml), {
        minIntervalMs,
        processor: BIORXIV_PROCESSOR,
        // The API's metadata wins; the XML adds the body.
        patch: (d) => ({
          ...draft,
          abstract: d.abstract || draft.abstract,
          sections: d.sections ?? [],
          captions: d.captions ?? [],
        }),
        ...(signal ? { signal } : {}),
      });
      if (text.article) return [text.article];
      items.push(...text.deadLetters);
    }
    const done = finishArticle(draft);
    const position = `${entry.doi}v${entry.version}`;
    if (done.ok) items.push(articleItem(done.article, position));
    else
      items.push(
        apiDeadLetter(
          { url, reason: `${done.reason} (${position})`, payload: JSON.stringify(raw) },
          BIORXIV_PROCESSOR,
        ),
      );
    return items;
  }

  return {
    name,
    async poll(raw, signal) {
      let cur = raw === null ? cursorAt(config.since, 0) : decodeCursor(name, BiorxivCursor, raw);
      if (cur.q !== q) {
        log.warn(
          { poller: name, day: cur.day },
          'category changed; re-reading the current day under the new one',
        );
        cur = cursorAt(cur.day, 0);
      }
      if (!isClosed(cur.day, now(), config.lagDays)) return page([], cur, true);
      const nextDay = cursorAt(addDays(cur.day, 1), 0);
      const url = endpoint(base, `details/${config.server}/${cur.day}/${cur.day}/${cur.offset}/json`);
      if (config.category) url.searchParams.set('category', config.category);
      const res = await http.get(url, {
        minIntervalMs,
        accept: 'application/json',
        ...(signal ? { signal } : {}),
      });
      const parsed = parseJson(res, DetailsPage);
      const message = parsed.ok ? parsed.value.messages[0]! : null;
      // 'no posts found' is how the API says an interval (or a cursor past its end) is empty.
      const status = message?.status.toLowerCase() ?? '';
      if (!parsed.ok || (status !== 'ok' && !status.startsWith('no posts'))) {
        const problem = parsed.ok
          ? { url: res.url, reason: `API status: ${message?.status}`, payload: res.body.toString('utf8') }
          : parsed.problem;
        const bad = badPage({
          problem,
          failures: cur.failures,
          maxFailures: config.maxPageFailures,
          skipped: `records ${cur.offset}-${cur.offset + SERVER_PAGE - 1} of ${cur.day}`,
          retry: (failures) => ({ ...cur, failures }),
          skip: () => cursorAt(cur.day, cur.offset + SERVER_PAGE),
          processor: BIORXIV_PROCESSOR,
          log,
        });
        return page(bad.items, bad.cursor, !bad.gaveUp);
      }
      const collection = status === 'ok' ? parsed.value.collection : [];
      const items: SourceItem[] = [];
      for (const [i, entry] of collection.entries()) {
        items.push(...(await toItems(entry, `${cur.offset + i}`, res.url, signal)));
      }
      const offset = cur.offset + collection.length;
      const total = message?.total;
      const finished =
        collection.length === 0 || (total !== undefined ? offset >= total : collection.length < SERVER_PAGE);
      return page(items, finished ? nextDay : cursorAt(cur.day, offset));
    },
  };
}
