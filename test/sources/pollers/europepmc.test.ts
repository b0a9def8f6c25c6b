import { afterEach, describe, expect, it } from 'vitest';
import { createEuropePmcPoller, type EuropePmcOptions } from '../../../sources/pollers/europepmc.js';
import { HostRateLimiter } from '../../../sources/pollers/rate-limit.js';
import type { PollPage } from '../../../sources/pollers/types.js';
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
  xml,
} from './fake-api.js';
import { europePmcRoute } from './recordings.js';

let api: FakeApi | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

const M1 = 'AoIIP4AAACgzODQwMDEwMQ==';

async function setup(route: Route = europePmcRoute) {
  api = await startFakeApi(route);
  const clock = clockAt('2024-03-07T12:00:00Z');
  const log = memoryLog();
  const make = (more: Partial<EuropePmcOptions> = {}) =>
    createEuropePmcPoller({
      baseUrl: `${api!.url}/europepmc/webservices/rest`,
      since: '2024-03-04',
      pageSize: 2,
      requestsPerSecond: 200,
      http: { backoffMs: 5, maxBackoffMs: 20, retries: 2 },
      limiter: new HostRateLimiter(),
      now: clock.now,
      log,
      ...more,
    });
  return { api: api!, clock, log, make };
}

const ids = (page: PollPage) => articlesOf(page.items).map((a) => a.id);
const searches = (a: FakeApi) => a.seen.filter((s) => s.path.endsWith('/search'));

describe('Europe PMC poller', () => {
  it('follows cursorMark through each finished day, reading open-access full text, until caught up', async () => {
    const { api, make } = await setup();
    const poller = make();
    expect(poller.name).toBe('europepmc');
    const pages: PollPage[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 6; i++) {
      const page = await poller.poll(cursor);
      pages.push(page);
      cursor = page.cursor;
    }
    expect(pages.map(ids)).toEqual([
      ['doi:10.1038/s41467-024-46001-1', 'doi:10.1101/2024.03.01.582001'],
      ['doi:10.1093/nar/gkae101', 'doi:10.7554/elife.90001'],
      [],
      ['doi:10.1128/mbio.03011-23'],
      [],
      [],
    ]);
    expect(pages.map((p) => p.done)).toEqual([false, false, false, false, true, true]);
    expect(pages.flatMap((p) => deadLettersOf(p.items))).toEqual([]);
    expect(searches(api).map((s) => [s.query.get('query'), s.query.get('cursorMark')])).toEqual([
      ['(HAS_ABSTRACT:y) AND FIRST_IDATE:[2024-03-04 TO 2024-03-04]', '*'],
      ['(HAS_ABSTRACT:y) AND FIRST_IDATE:[2024-03-04 TO 2024-03-04]', M1],
      ['(HAS_ABSTRACT:y) AND FIRST_IDATE:[2024-03-04 TO 2024-03-04]', 'AoIIP4AAACgzODQwMDEwNQ=='],
      ['(HAS_ABSTRACT:y) AND FIRST_IDATE:[2024-03-05 TO 2024-03-05]', '*'],
      ['(HAS_ABSTRACT:y) AND FIRST_IDATE:[2024-03-05 TO 2024-03-05]', 'AoIIP4AAACgzODQxMDAwMQ=='],
    ]);
    const q = searches(api)[0]!.query;
    expect([q.get('format'), q.get('resultType'), q.get('pageSize'), q.get('sort')]).toEqual([
      'json',
      'core',
      '2',
      'FIRST_IDATE_D asc',
    ]);
    // The only open-access record in Europe PMC was read from its JATS full text.
    expect(api.seen.filter((s) => s.path.endsWith('/fullTextXML')).map((s) => s.path)).toEqual([
      '/europepmc/webservices/rest/PMC10900001/fullTextXML',
    ]);
    const [full, preprint] = articlesOf(pages[0]!.items);
    expect(full).toMatchObject({
      source: 'europepmc',
      sourceUri: 'https://europepmc.org/article/MED/38400101',
      pmid: '38400101',
      pmcid: 'PMC10900001',
      licence: 'cc by',
      published: '2024-03-03',
    });
    expect(full!.sections.map((s) => s.heading)).toEqual([
      'Introduction',
      'Results / CCA1 and LHY are required for the dawn restraint',
      'Methods',
    ]);
    expect(full!.captions).toHaveLength(1);
    expect(full!.mesh.map((m) => [m.name, m.majorTopic])).toEqual([
      ['Arabidopsis', true],
      ['Circadian Clocks', false],
    ]);
    expect(preprint).toMatchObject({
      source: 'europepmc',
      pmid: null,
      doi: '10.1101/2024.03.01.582001',
      title: 'Horizontal transfer of a nitrogenase cluster between soil Paenibacillus lineages',
      licence: 'cc by-nc',
      publicationTypes: ['Preprint'],
    });
    expect(preprint!.sections).toEqual([]);
  });

  it('turns the HTML of Europe PMC abstracts into labelled paragraphs', async () => {
    const { make } = await setup();
    const page = await make({ fullText: false }).poll(null);
    expect(articlesOf(page.items)[0]!.abstract).toBe(
      'Background: Stomatal aperture follows a daily rhythm whose molecular gate under water deficit is unknown.\n\n' +
        'Results: Loss of CCA1 and LHY abolished the dawn peak of stomatal conductance.',
    );
  });

  it('resumes after a restart at the stored cursorMark', async () => {
    const { api, make } = await setup();
    const first = await make().poll(null);
    expect(JSON.parse(first.cursor)).toMatchObject({ day: '2024-03-04', mark: M1 });
    const next = await make().poll(first.cursor);
    expect(ids(next)).toEqual(['doi:10.1093/nar/gkae101', 'doi:10.7554/elife.90001']);
    expect(searches(api).at(-1)!.query.get('cursorMark')).toBe(M1);
    expect(await make().poll(first.cursor)).toEqual(next);
  });

  it('makes one dead letter of a result it cannot read and keeps the others', async () => {
    const route: Route = (req, s) => {
      if (!req.path.endsWith('/search') || req.query.get('cursorMark') !== '*') return europePmcRoute(req, s);
      const page = JSON.parse(fixture('europepmc/search-2024-03-04-1.json')) as {
        resultList: { result: unknown[] };
      };
      page.resultList.result[1] = { id: 812345, title: ['not', 'a', 'title'] };
      return json(JSON.stringify(page));
    };
    const { make } = await setup(route);
    const page = await make().poll(null);
    expect(ids(page)).toEqual(['doi:10.1038/s41467-024-46001-1']);
    const dead = deadLettersOf(page.items);
    expect(dead).toHaveLength(1);
    expect(dead[0]!.reason).toMatch(/^unexpected result 2 of the page/);
    expect(dead[0]!.payload).toContain('812345');
    expect(JSON.parse(page.cursor)).toMatchObject({ mark: M1 });
  });

  it('throws on a junk page instead of skipping what it held, and reads it once it is well', async () => {
    let junk = true;
    const route: Route = (req, s) =>
      junk && req.path.endsWith('/search')
        ? {
            headers: { 'content-type': 'text/html' },
            body: '<html><body>Service under maintenance</body></html>',
          }
        : europePmcRoute(req, s);
    const { make } = await setup(route);
    const poller = make();
    await expect(poller.poll(null)).rejects.toMatchObject({
      reason: expect.stringMatching(/^malformed JSON: /),
    });
    junk = false;
    const second = await poller.poll(null);
    expect(ids(second)).toHaveLength(2);
    expect(JSON.parse(second.cursor)).toMatchObject({ mark: M1 });
  });

  it('stops rather than ingest another result set when the echoed query is not the one asked', async () => {
    // Europe PMC fell back to a plainer query than the one sent: its `request` says so.
    const route: Route = (req, s) => {
      const reply = europePmcRoute(req, s) as { body: string };
      return req.path.endsWith('/search')
        ? json(reply.body.replace('"queryString": "(HAS_ABSTRACT:y) AND ', '"queryString": "'))
        : reply;
    };
    const { make } = await setup(route);
    await expect(make().poll(null)).rejects.toMatchObject({
      reason:
        "Europe PMC answered the query 'FIRST_IDATE:[2024-03-04 TO 2024-03-04]', not '(HAS_ABSTRACT:y) AND FIRST_IDATE:[2024-03-04 TO 2024-03-04]' as asked: nothing ingested from another result set",
    });
  });

  it("skips, on an operator's word, the rest of the day from the stalled cursorMark", async () => {
    const { api, make } = await setup();
    const first = await make().poll(null);
    const seen = api.seen.length;
    const skip = await make().skip(first.cursor);
    expect(skip.skipped).toBe(`the rest of FIRST_IDATE 2024-03-04 (from cursorMark ${M1})`);
    expect(JSON.parse(skip.cursor)).toMatchObject({ day: '2024-03-05', mark: '*' });
    expect(api.seen.length).toBe(seen);
  });

  it('falls back to the abstract when the full text is missing or broken, saying why when broken', async () => {
    let status: 'missing' | 'broken' = 'missing';
    const route: Route = (req, s) => {
      if (!req.path.endsWith('/fullTextXML')) return europePmcRoute(req, s);
      return status === 'missing'
        ? { status: 404, body: '' }
        : xml('<article><front><article-meta><title-group>');
    };
    const { make } = await setup(route);
    const missing = await make().poll(null);
    expect(articlesOf(missing.items)[0]).toMatchObject({ pmcid: 'PMC10900001', sections: [] });
    expect(deadLettersOf(missing.items)).toEqual([]);
    status = 'broken';
    const broken = await make().poll(null);
    expect(articlesOf(broken.items)[0]).toMatchObject({ pmcid: 'PMC10900001', sections: [] });
    const dead = deadLettersOf(broken.items);
    expect(dead).toHaveLength(1);
    expect(dead[0]!.reason).toMatch(/^full text: /);
    expect(dead[0]!.origin).toEqual({
      kind: 'api',
      url: expect.stringMatching(/\/PMC10900001\/fullTextXML$/),
    });
  });

  it('rides out a 500 within the poll', async () => {
    let failures = 1;
    const route: Route = (req, s) => (failures-- > 0 ? { status: 500 } : europePmcRoute(req, s));
    const { api, make } = await setup(route);
    const page = await make({ fullText: false }).poll(null);
    expect(ids(page)).toHaveLength(2);
    expect(searches(api)).toHaveLength(2);
  });
});
