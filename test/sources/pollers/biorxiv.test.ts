import { afterEach, describe, expect, it } from 'vitest';
import { type BiorxivOptions, createBiorxivPoller } from '../../../processors/sources/pollers/biorxiv.js';
import { HostRateLimiter } from '../../../processors/sources/pollers/rate-limit.js';
import type { PollPage } from '../../../processors/sources/pollers/types.js';
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

  it('gives up a malformed page as one dead letter and goes on after it', async () => {
    const route: Route = (req, s) =>
      req.path.endsWith('/2024-03-04/0/json')
        ? json('{"messages":[{"status":"ok","count":2,"total":"5"}],"collection":[{"doi"')
        : biorxivRoute(req, s);
    const { make } = await setup(route);
    const poller = make({ maxPageFailures: 1 });
    const bad = await poller.poll(null);
    expect(articlesOf(bad.items)).toEqual([]);
    const dead = deadLettersOf(bad.items);
    expect(dead).toHaveLength(1);
    expect(dead[0]!.reason).toMatch(
      /^malformed JSON: .*; given up after 1 attempt\(s\), skipped records 0-99 of 2024-03-04$/,
    );
    expect(dead[0]!.origin).toEqual({
      kind: 'api',
      url: expect.stringMatching(/\/details\/biorxiv\/2024-03-04\/2024-03-04\/0\/json$/),
    });
    expect(dead[0]!.payload).toContain('"collection":[{"doi"');
    expect(bad.done).toBe(false);
    const after = await poller.poll(bad.cursor);
    expect(JSON.parse(bad.cursor)).toMatchObject({ day: '2024-03-04', offset: 100 });
    expect(after.items).toEqual([]);
    expect(JSON.parse(after.cursor)).toMatchObject({ day: '2024-03-05', offset: 0 });
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
    await make({ category: 'cell_biology' }).poll(first.cursor);
    expect(api.seen.at(-1)!.query.get('category')).toBe('cell_biology');
    expect(details(api).at(-1)).toBe('/details/biorxiv/2024-03-04/2024-03-04/0/json');
    expect(log.lines.some((l) => l.includes('category changed'))).toBe(true);
  });
});
