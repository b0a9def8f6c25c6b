import { afterEach, describe, expect, it } from 'vitest';
import { type BiorxivOptions, createBiorxivPoller } from '../../../sources/pollers/biorxiv.js';
import { HostRateLimiter } from '../../../sources/pollers/rate-limit.js';
import { type PollPage, UnreadablePage } from '../../../sources/pollers/types.js';
import {
  articlesOf,
  clockAt,
  deadLettersOf,
  type FakeApi,
  fixture,
  json,
  memoryLog,
  type Route,
  startFakeApi,
} from './fake-api.js';
import { biorxivRoute } from './recordings.js';

let api: FakeApi | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

async function setup(route: Route = biorxivRoute) {
  api = await startFakeApi(route);
  const clock = clockAt('2024-03-07T12:00:00Z');
  const log = memoryLog();
  const make = (more: Partial<BiorxivOptions> = {}) =>
    createBiorxivPoller({
      baseUrl: api!.url,
      since: '2024-03-04',
      requestsPerSecond: 200,
      http: { backoffMs: 5, maxBackoffMs: 20, retries: 2 },
      limiter: new HostRateLimiter(),
      now: clock.now,
      log,
      ...more,
    });
  return { api: api!, clock, log, make };
}

const dois = (page: PollPage) => articlesOf(page.items).map((a) => a.doi);
const details = (a: FakeApi) => a.seen.filter((s) => s.path.startsWith('/details/')).map((s) => s.path);

describe('bioRxiv poller', () => {
  it("pages through each finished day by the server's cursor, then reports it is caught up", async () => {
    const { api, make } = await setup();
    const poller = make();
    expect(poller.name).toBe('biorxiv');
    const pages: PollPage[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 5; i++) {
      const page = await poller.poll(cursor);
      pages.push(page);
      cursor = page.cursor;
    }
    expect(pages.map(dois)).toEqual([
      ['10.1101/2024.03.01.583001', '10.1101/2024.03.02.583102'],
      ['10.1101/2024.02.20.581234', '10.1101/2024.03.03.583350'],
      ['10.1101/2024.03.04.583411'],
      [],
      [],
    ]);
    expect(pages.map((p) => p.done)).toEqual([false, false, false, true, true]);
    expect(details(api)).toEqual([
      '/details/biorxiv/2024-03-04/2024-03-04/0/json',
      '/details/biorxiv/2024-03-04/2024-03-04/2/json',
      '/details/biorxiv/2024-03-04/2024-03-04/4/json',
      '/details/biorxiv/2024-03-05/2024-03-05/0/json',
    ]);
    expect(JSON.parse(pages[3]!.cursor)).toMatchObject({ day: '2024-03-06', offset: 0 });
    const [first] = articlesOf(pages[0]!.items);
    expect(first).toMatchObject({
      id: 'doi:10.1101/2024.03.01.583001',
      source: 'biorxiv',
      sourceUri: 'https://www.biorxiv.org/content/10.1101/2024.03.01.583001v1',
      journal: 'bioRxiv',
      published: '2024-03-04',
      licence: 'cc_by',
      keywords: ['neuroscience'],
      publicationTypes: ['preprint'],
      sections: [],
    });
    // A revised preprint is a record of the day it was posted, under its DOI's id.
    expect(articlesOf(pages[1]!.items)[0]).toMatchObject({
      id: 'doi:10.1101/2024.02.20.581234',
      licence: 'cc_by',
    });
    expect(articlesOf(pages[0]!.items)[1]!.title).toBe(
      'A CRISPRi screen maps essential genes of Mycobacterium smegmatis under hypoxia',
    );
  });

  it('resumes after a restart at the stored offset', async () => {
    const { api, make } = await setup();
    const first = await make().poll(null);
    const next = await make().poll(first.cursor);
    expect(dois(next)).toEqual(['10.1101/2024.02.20.581234', '10.1101/2024.03.03.583350']);
    expect(details(api).at(-1)).toBe('/details/biorxiv/2024-03-04/2024-03-04/2/json');
  });

  it('throws on a malformed page, naming it, and reads it whole once it is well again', async () => {
    let broken = true;
    const route: Route = (req, s) =>
      broken && req.path.endsWith('/2024-03-04/0/json')
        ? json('{"messages":[{"status":"ok","count":2,"total":"5"}],"collection":[{"doi"')
        : biorxivRoute(req, s);
    const { make } = await setup(route);
    const poller = make();
    const err = await poller.poll(null).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnreadablePage);
    expect((err as UnreadablePage).reason).toMatch(/^malformed JSON: /);
    expect((err as UnreadablePage).url).toMatch(/\/details\/biorxiv\/2024-03-04\/2024-03-04\/0\/json$/);
    expect((err as UnreadablePage).payload).toContain('"collection":[{"doi"');
    broken = false;
    const page = await poller.poll(null);
    expect(dois(page)).toEqual(['10.1101/2024.03.01.583001', '10.1101/2024.03.02.583102']);
  });

  it("gives bioRxiv's own words for an error status, and an empty 200 body as such", async () => {
    let reply = json(JSON.stringify({ messages: [{ status: 'Error: interval not valid' }], collection: [] }));
    const { make } = await setup(() => reply);
    await expect(make().poll(null)).rejects.toMatchObject({ reason: 'bioRxiv: Error: interval not valid' });
    reply = json('');
    await expect(make().poll(null)).rejects.toMatchObject({ reason: 'empty body (HTTP 200)' });
  });

  it('advances by the records received, not by an assumed page size', async () => {
    // The server's pages shrank to 3: the offset follows what came, and `total` ends the day.
    const full = JSON.parse(fixture('biorxiv/details-2024-03-04-0.json')) as {
      messages: Record<string, unknown>[];
      collection: Record<string, unknown>[];
    };
    const records = [0, 1, 2, 3, 4].map((n) => ({
      ...full.collection[0]!,
      doi: `10.1101/2024.03.04.90000${n}`,
    }));
    const route: Route = (req) => {
      const offset = Number(/\/(\d+)\/json$/.exec(req.path)![1]);
      if (!req.path.includes('2024-03-04'))
        return json(JSON.stringify({ messages: [{ status: 'no posts found' }] }));
      const collection = records.slice(offset, offset + 3);
      return json(
        JSON.stringify({
          messages: [{ ...full.messages[0], cursor: offset, count: collection.length, total: '5' }],
          collection,
        }),
      );
    };
    const { api, make } = await setup(route);
    const poller = make();
    const first = await poller.poll(null);
    const second = await poller.poll(first.cursor);
    expect([...dois(first), ...dois(second)]).toEqual(records.map((r) => r.doi));
    expect(JSON.parse(first.cursor)).toMatchObject({ day: '2024-03-04', offset: 3 });
    expect(JSON.parse(second.cursor)).toMatchObject({ day: '2024-03-05', offset: 0 });
    expect(details(api)).toEqual([
      '/details/biorxiv/2024-03-04/2024-03-04/0/json',
      '/details/biorxiv/2024-03-04/2024-03-04/3/json',
    ]);
  });

  it('stops rather than ingest another stream when the echoed category is not the one asked', async () => {
    // An unknown category: bioRxiv answers for all of them and says so in messages[0].category.
    const { make } = await setup();
    const err = (await make({ category: 'cell_biology' })
      .poll(null)
      .catch((e: unknown) => e)) as UnreadablePage;
    expect(err).toBeInstanceOf(UnreadablePage);
    expect(err.reason).toBe(
      "bioRxiv answered for category 'all', not 'cell_biology' as asked: nothing ingested from another stream",
    );
    const echoed: Route = (req, s) => {
      const reply = biorxivRoute(req, s) as { body: string };
      return json(reply.body.replace('"category": "all"', '"category": "cell biology"'));
    };
    await api!.close();
    const { make: makeEchoed } = await setup(echoed);
    expect(dois(await makeEchoed({ category: 'cell_biology' }).poll(null))).toHaveLength(2);
  });

  it("skips, on an operator's word, the rest of the day from the stalled offset", async () => {
    const { api, make } = await setup();
    const first = await make().poll(null);
    const seen = api.seen.length;
    const skip = await make().skip(first.cursor);
    expect(skip.skipped).toBe('biorxiv records 2 onward of 2024-03-04');
    expect(JSON.parse(skip.cursor)).toMatchObject({ day: '2024-03-05', offset: 0 });
    expect(api.seen.length).toBe(seen);
  });

  it('makes one dead letter of a record it cannot read and keeps the rest of the page', async () => {
    const route: Route = (req, s) => {
      if (!req.path.endsWith('/2024-03-04/0/json')) return biorxivRoute(req, s);
      const page = JSON.parse(fixture('biorxiv/details-2024-03-04-0.json')) as {
        collection: Record<string, unknown>[];
      };
      delete page.collection[0]!.doi;
      return json(JSON.stringify(page));
    };
    const { make } = await setup(route);
    const page = await make().poll(null);
    expect(dois(page)).toEqual(['10.1101/2024.03.02.583102']);
    expect(deadLettersOf(page.items).map((d) => d.reason)).toEqual([
      expect.stringMatching(/^unexpected record 0: /),
    ]);
    expect(JSON.parse(page.cursor)).toMatchObject({ offset: 2 });
  });

  it('reads JATS full text when asked, and keeps the abstract where there is none', async () => {
    const { api, make } = await setup();
    const page = await make({ fullText: true }).poll(null);
    const [withText, withoutText] = articlesOf(page.items);
    expect(withText).toMatchObject({ source: 'biorxiv', licence: 'cc_by', doi: '10.1101/2024.03.01.583001' });
    expect(withText!.sections.map((s) => s.heading)).toEqual(['Introduction', 'Results']);
    expect(withoutText!.sections).toEqual([]);
    expect(deadLettersOf(page.items)).toEqual([]);
    expect(api.seen.filter((s) => s.path.endsWith('.source.xml'))).toHaveLength(2);
  });

  it('waits out a 429 Retry-After and carries on', async () => {
    let first = true;
    const route: Route = (req, s) => {
      if (first) {
        first = false;
        return { status: 429, headers: { 'retry-after': '1' } };
      }
      return biorxivRoute(req, s);
    };
    const { api, make } = await setup(route);
    const page = await make().poll(null);
    expect(dois(page)).toHaveLength(2);
    expect(api.seen[1]!.at - api.seen[0]!.at).toBeGreaterThanOrEqual(950);
  });

  it('passes the subject category and does not resume another category inside a day', async () => {
    const { api, make, log } = await setup();
    const first = await make().poll(null);
    // The recorded server echoes category 'all', so the poll refuses the page; what it asked is what counts here.
    await expect(make({ category: 'cell_biology' }).poll(first.cursor)).rejects.toThrow(/not 'cell_biology'/);
    expect(api.seen.at(-1)!.query.get('category')).toBe('cell_biology');
    expect(details(api).at(-1)).toBe('/details/biorxiv/2024-03-04/2024-03-04/0/json');
    expect(log.lines.some((l) => l.includes('category changed'))).toBe(true);
  });
});
