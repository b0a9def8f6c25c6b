import { z } from 'zod';
import { BiorxivConfig, isDay } from '../../schemas/pollers.js';
import { articleItem, type SourceItem } from '../items.js';
import { type ArticleDraft, finishArticle, parseDate, stripMarkup } from '../normalise.js';
import { articleIdOf } from '../works.js';
import { apiDeadLetter, parseJson } from './api-items.js';
import { endpoint, type PollerDeps, resolveDeps, unreadable } from './common.js';
import { decodeCursor, encodeCursor, queryKey } from './cursor.js';
import { addDays, isClosed } from './days.js';
import { fetchFullText } from './fulltext.js';
import type { HttpCall, Poller, PollPage } from './types.js';

export const BIORXIV_PROCESSOR = 'sources/biorxiv';
const API = 'https://api.biorxiv.org/';

export type BiorxivOptions = Omit<z.input<typeof BiorxivConfig>, 'kind'> & PollerDeps;

/** Position: posting day `day`, record `offset` of the server's list for that day. */
const BiorxivCursor = z.object({
  v: z.literal(1),
  day: z.string().refine(isDay),
  offset: z.number().int().min(0),
  q: z.string(),
});
type BiorxivCursor = z.infer<typeof BiorxivCursor>;

const Message = z.object({
  status: z.string(),
  /** The category the server answered for ('all' when none was asked). */
  category: z.string().optional(),
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
  /** The journal version's DOI once the preprint is published ('NA' before). */
  published: z.string().optional(),
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
    // The journal version is the same work: ingest links the two whichever comes first.
    relatedIds: [articleIdOf(e.published ?? '')].filter((id) => id?.startsWith('doi:')) as string[],
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
  const cursorAt = (day: string, offset: number): BiorxivCursor => ({ v: 1, day, offset, q });
  // bioRxiv writes categories with spaces or underscores ('cell biology', 'cell_biology').
  const categoryKey = (c: string) =>
    c
      .trim()
      .toLowerCase()
      .replace(/[\s_]+/g, '_');
  const askedCategory = categoryKey(config.category ?? 'all');
  function position(raw: string | null): BiorxivCursor {
    const cur = raw === null ? cursorAt(config.since, 0) : decodeCursor(name, BiorxivCursor, raw);
    if (cur.q === q) return cur;
    log.warn(
      { poller: name, day: cur.day },
      'category changed; re-reading the current day under the new one',
    );
    return cursorAt(cur.day, 0);
  }
  const page = (items: SourceItem[], c: BiorxivCursor, wait = false): PollPage => ({
    items,
    cursor: encodeCursor(c),
    done: wait || !isClosed(c.day, now(), config.lagDays),
  });

  async function toItems(raw: unknown, at: string, url: string, call: HttpCall = {}): Promise<SourceItem[]> {
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
        ...call,
        minIntervalMs,
        processor: BIORXIV_PROCESSOR,
        // The API's metadata wins; the XML adds the body.
        patch: (d) => ({
          ...draft,
          abstract: d.abstract || draft.abstract,
          sections: d.sections ?? [],
          captions: d.captions ?? [],
        }),
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
    processor: BIORXIV_PROCESSOR,
    async poll(raw, call) {
      const cur = position(raw);
      if (!isClosed(cur.day, now(), config.lagDays)) return page([], cur, true);
      const nextDay = cursorAt(addDays(cur.day, 1), 0);
      const url = endpoint(base, `details/${config.server}/${cur.day}/${cur.day}/${cur.offset}/json`);
      if (config.category) url.searchParams.set('category', config.category);
      const res = await http.get(url, { ...call, minIntervalMs, accept: 'application/json' });
      const parsed = parseJson(res, DetailsPage);
      if (!parsed.ok) unreadable(parsed.problem);
      const payload = res.body.toString('utf8');
      const message = parsed.value.messages[0]!;
      // 'no posts found' is how the API says an interval (or a cursor past its end) is empty.
      const status = message.status.toLowerCase();
      const empty = status.startsWith('no posts');
      if (status !== 'ok' && !empty)
        unreadable({ url: res.url, reason: `bioRxiv: ${message.status}`, payload });
      // An unknown or dropped category makes the server answer for all of them: not our stream.
      if (status === 'ok' && categoryKey(message.category ?? '') !== askedCategory)
        unreadable({
          url: res.url,
          reason: `bioRxiv answered for category '${message.category ?? '(none)'}', not '${config.category ?? 'all'}' as asked: nothing ingested from another stream`,
          payload,
        });
      const collection = empty ? [] : parsed.value.collection;
      const items: SourceItem[] = [];
      for (const [i, entry] of collection.entries()) {
        items.push(...(await toItems(entry, `${cur.offset + i}`, res.url, call)));
      }
      // The offset moves by the records received, whatever size the server's pages are this year.
      const offset = cur.offset + collection.length;
      const finished = collection.length === 0 || (message.total !== undefined && offset >= message.total);
      return page(items, finished ? nextDay : cursorAt(cur.day, offset));
    },

    async skip(raw) {
      // The size of a page that cannot be read is unknown, so giving it up gives up the rest of its day.
      const cur = position(raw);
      return {
        cursor: encodeCursor(cursorAt(addDays(cur.day, 1), 0)),
        skipped: `${name} records ${cur.offset} onward of ${cur.day}`,
      };
    },
  };
}
