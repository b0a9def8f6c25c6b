import { afterEach, describe, expect, it } from 'vitest';
import { createPubmedPoller, type PubmedOptions } from '../../../sources/pollers/pubmed.js';
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
  xml,
} from './fake-api.js';
import { efetchBody, pubmedRoute } from './recordings.js';

let api: FakeApi | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

const NOON_MARCH_7 = '2024-03-07T12:00:00Z';

async function setup(route: Route = pubmedRoute, opts: Partial<PubmedOptions> = {}) {
  api = await startFakeApi(route);
  const clock = clockAt(NOON_MARCH_7);
  const log = memoryLog();
  const make = (more: Partial<PubmedOptions> = {}) =>
    createPubmedPoller({
      baseUrl: `${api!.url}/entrez/eutils/`,
      query: 'all[sb]',
      since: '2024-03-04',
      pageSize: 2,
      requestsPerSecond: 200,
      email: 'ops@example.org',
      apiKey: '',
      http: { backoffMs: 5, maxBackoffMs: 20, retries: 2 },
      limiter: new HostRateLimiter(),
      now: clock.now,
      log,
      ...opts,
      ...more,
    });
  return { api: api!, clock, log, make };
}

const pmids = (page: PollPage) => articlesOf(page.items).map((a) => a.pmid);
const efetchIds = (a: FakeApi) =>
  a.seen.filter((s) => s.path.endsWith('efetch.fcgi')).map((s) => s.query.get('id'));

describe('PubMed poller', () => {
  it('pages through each finished EDAT day in PMID order, then reports it is caught up', async () => {
    const { api, make } = await setup();
    const poller = make();
    expect(poller.name).toBe('pubmed');
    const pages: PollPage[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 5; i++) {
      const page = await poller.poll(cursor);
      pages.push(page);
      cursor = page.cursor;
    }
    // The server lists newest first; pages follow ascending PMIDs regardless.
    expect(pages.map(pmids)).toEqual([
      ['38400101', '38400102'],
      ['38400103', '38400104'],
      ['38400105'],
      ['38410001'],
      [],
    ]);
    expect(pages.map((p) => p.done)).toEqual([false, false, false, true, true]);
    expect(pages.flatMap((p) => deadLettersOf(p.items))).toEqual([]);
    const articles = pages.flatMap((p) => articlesOf(p.items));
    expect(new Set(articles.map((a) => a.id)).size).toBe(articles.length);
    const first = articles[0]!;
    expect(first).toMatchObject({
      id: 'doi:10.1038/s41467-024-46001-1',
      source: 'pubmed',
      sourceUri: 'https://pubmed.ncbi.nlm.nih.gov/38400101/',
      pmid: '38400101',
      pmcid: 'PMC10900001',
      journal: 'Nature communications',
      published: '2024-03-04',
    });
    expect(first.abstract).toMatch(/^BACKGROUND: Stomatal aperture/);
    expect(first.mesh.map((m) => m.name)).toEqual(['Arabidopsis', 'Circadian Clocks']);

    // ESearch once per day (the id list is reused across the day's pages), EFetch once per page.
    const searches = api.seen.filter((s) => s.path.endsWith('esearch.fcgi'));
    expect(searches.map((s) => s.query.get('mindate'))).toEqual(['2024/03/04', '2024/03/05']);
    expect(
      searches.every((s) => s.query.get('datetype') === 'edat' && s.query.get('retmode') === 'json'),
    ).toBe(true);
    expect(efetchIds(api)).toEqual(['38400101,38400102', '38400103,38400104', '38400105', '38410001']);
    // Caught up: the last poll asked nothing, and NCBI's tool/email travelled with every request.
    expect(api.seen).toHaveLength(6);
    expect(api.seen.every((s) => s.query.get('tool') === 'bioalchemy-stream')).toBe(true);
    expect(api.seen.every((s) => s.query.get('email') === 'ops@example.org')).toBe(true);
  });

  it('resumes after a restart from the persisted cursor: the next page, not the first', async () => {
    const { api, make } = await setup();
    const first = await make().poll(null);
    const requestsBefore = api.seen.length;
    // A new process: a new poller, no cache, only the stored cursor.
    const next = await make().poll(first.cursor);
    expect(pmids(next)).toEqual(['38400103', '38400104']);
    expect(efetchIds(api).slice(-1)).toEqual(['38400103,38400104']);
    expect(api.seen.length - requestsBefore).toBe(2);
    // The same cursor gives the same page: what a retried step relies on.
    const again = await make().poll(first.cursor);
    expect(again).toEqual(next);
  });

  it('when caught up asks nothing until the next day is over, and re-polling repeats nothing', async () => {
    const { api, clock, make } = await setup();
    const poller = make();
    let page = await poller.poll(null);
    while (!page.done) page = await poller.poll(page.cursor);
    const seen = api.seen.length;
    const idle = await poller.poll(page.cursor);
    expect(idle).toEqual({ items: [], cursor: page.cursor, done: true });
    expect(api.seen.length).toBe(seen);
    clock.set('2024-03-08T12:00:00Z');
    const nextDay = await poller.poll(page.cursor);
    expect(api.seen.at(-1)!.query.get('mindate')).toBe('2024/03/06');
    expect(nextDay.items).toEqual([]);
    expect(nextDay.done).toBe(true);
    expect(JSON.parse(nextDay.cursor)).toMatchObject({ day: '2024-03-07', after: null });
  });

  it('throws on a broken EFetch body, keeping nothing of it, and reads the page whole once it is well', async () => {
    const broken = efetchBody(['38400101', '38400102']).replace(
      /<\/PubmedArticle>\s*<PubmedArticle>[\s\S]*$/,
      '</PubmedArticle><PubmedArt',
    );
    let fault = true;
    const route: Route = (req, s) =>
      fault && req.path.endsWith('efetch.fcgi') ? xml(broken) : pubmedRoute(req, s);
    const { make } = await setup(route);
    const poller = make();
    await expect(poller.poll(null)).rejects.toBeInstanceOf(UnreadablePage);
    fault = false;
    const page = await poller.poll(null);
    expect(pmids(page)).toEqual(['38400101', '38400102']);
    expect(deadLettersOf(page.items)).toEqual([]);
  });

  it("gives NCBI's own ERROR text for a 200 error body, never reading it as an empty day", async () => {
    const error = 'Search Backend failed: Database is not supported: pubmed';
    // As ESearch sends it in an outage: 200, count 0, no ids, and the ERROR beside them.
    const body = JSON.stringify({
      header: { type: 'esearch', version: '0.3' },
      esearchresult: { count: '0', retmax: '0', retstart: '0', idlist: [], ERROR: error },
    });
    const { make } = await setup((req, s) =>
      req.path.endsWith('esearch.fcgi') ? json(body) : pubmedRoute(req, s),
    );
    await expect(make().poll(null)).rejects.toMatchObject({ reason: `NCBI ESearch: ${error}` });
    const efetchError =
      '<?xml version="1.0" ?>\n<eFetchResult>\n\t<ERROR>Unable to obtain query #1</ERROR>\n</eFetchResult>\n';
    await api!.close();
    const { make: again } = await setup((req, s) =>
      req.path.endsWith('efetch.fcgi') ? xml(efetchError) : pubmedRoute(req, s),
    );
    await expect(again().poll(null)).rejects.toMatchObject({
      reason: 'NCBI EFetch: Unable to obtain query #1',
    });
  });

  it('accounts for every PMID asked: one EFetch did not return is a dead letter naming it', async () => {
    const route: Route = (req, s) =>
      req.path.endsWith('efetch.fcgi') ? xml(efetchBody(['38400102'])) : pubmedRoute(req, s);
    const { make } = await setup(route);
    const page = await make().poll(null);
    expect(pmids(page)).toEqual(['38400102']);
    expect(deadLettersOf(page.items).map((d) => d.reason)).toEqual([
      'PMID 38400101 is listed by ESearch for EDAT 2024-03-04 but EFetch returned no record for it',
    ]);
    expect(JSON.parse(page.cursor)).toMatchObject({ day: '2024-03-04', after: '38400102' });
    // None of the page at all is an outage, not a page of absences.
    const empty: Route = (req, s) =>
      req.path.endsWith('efetch.fcgi') ? xml(efetchBody([])) : pubmedRoute(req, s);
    await api!.close();
    const { make: none } = await setup(empty);
    await expect(none().poll(null)).rejects.toMatchObject({
      reason: expect.stringMatching(/^no record element/),
    });
  });

  it("skips, on an operator's word, the next page's PMIDs when the listing reads, else the rest of the day", async () => {
    const { make } = await setup();
    const first = await make().poll(null);
    const skip = await make().skip(first.cursor);
    expect(skip.skipped).toBe('PMIDs 38400103, 38400104 of EDAT 2024-03-04');
    expect(JSON.parse(skip.cursor)).toMatchObject({ day: '2024-03-04', after: '38400104' });
    await api!.close();
    const { make: down } = await setup(() => json('{"esearchresult":{"ERROR":"Search Backend failed"}}'));
    const rest = await down().skip(first.cursor);
    expect(rest.skipped).toBe('every PMID of EDAT 2024-03-04 after 38400102');
    expect(JSON.parse(rest.cursor)).toMatchObject({ day: '2024-03-05', after: null });
  });

  it('makes one dead letter of a record it cannot read and keeps the rest of the page', async () => {
    const route: Route = (req, s) => {
      if (!req.path.endsWith('efetch.fcgi')) return pubmedRoute(req, s);
      const body = efetchBody((req.query.get('id') ?? '').split(','));
      // A record with its MedlineCitation missing, as a damaged response might have.
      return xml(body.replace(/<MedlineCitation[\s\S]*?<\/MedlineCitation>/, ''));
    };
    const { make } = await setup(route);
    const page = await make().poll(null);
    expect(pmids(page)).toEqual(['38400102']);
    const dead = deadLettersOf(page.items);
    expect(dead).toHaveLength(1);
    expect(dead[0]!.reason).toMatch(/^PubmedArticle without MedlineCitation \(record 1, line \d+\)$/);
    expect(dead[0]!.origin).toEqual({
      kind: 'api',
      url: expect.stringMatching(/\/efetch\.fcgi\?db=pubmed&id=38400101%2C38400102&retmode=xml&tool=/),
    });
    expect(JSON.parse(page.cursor)).toMatchObject({ day: '2024-03-04', after: '38400102' });
  });

  it('says so in a dead letter when a day has more matches than ESearch lists', async () => {
    const route: Route = (req, s) => {
      if (req.path.endsWith('esearch.fcgi') && req.query.get('mindate') === '2024/03/04') {
        const body = JSON.parse(fixture('pubmed/esearch-2024-03-04.json')) as {
          esearchresult: { count: string; idlist: string[] };
        };
        // A query too broad: 12,000 matches, of which ESearch lists its maximum, 10,000.
        body.esearchresult.count = '12000';
        const more = Array.from({ length: 10_000 - body.esearchresult.idlist.length }, (_, i) =>
          String(39_000_000 + i),
        );
        body.esearchresult.idlist.push(...more);
        return json(JSON.stringify(body));
      }
      return pubmedRoute(req, s);
    };
    const { make } = await setup(route);
    const page = await make().poll(null);
    expect(pmids(page)).toEqual(['38400101', '38400102']);
    expect(deadLettersOf(page.items).map((d) => d.reason)).toEqual([
      'EDAT 2024-03-04 has 12000 matches but ESearch lists 10000: the rest are not read; narrow the query',
    ]);
  });

  it('refuses a cut listing (fewer ids than matches) as unreadable, not as a small day', async () => {
    const route: Route = (req, s) => {
      if (!req.path.endsWith('esearch.fcgi')) return pubmedRoute(req, s);
      const body = JSON.parse(fixture('pubmed/esearch-2024-03-04.json')) as {
        esearchresult: { idlist: string[] };
      };
      body.esearchresult.idlist = body.esearchresult.idlist.slice(0, 2);
      return json(JSON.stringify(body));
    };
    const { make } = await setup(route);
    await expect(make().poll(null)).rejects.toMatchObject({ reason: 'ESearch counts 5 matches but lists 2' });
  });

  it('sends the NCBI api key but never puts it in errors, logs, dead letters or articles', async () => {
    const key = 'ab12cd34ef56-SECRET-KEY';
    const { api, make, log } = await setup();
    const ok = await make({ apiKey: key }).poll(null);
    expect(api.seen.every((s) => s.query.get('api_key') === key)).toBe(true);
    expect(JSON.stringify(ok)).not.toContain(key);

    // NCBI's 429 body echoes the key; the error and the retry log lines must not.
    const failing = await startFakeApi(() => ({
      status: 429,
      body: `{"error":"API rate limit exceeded","api-key":"${key}","count":"11","limit":"10"}`,
    }));
    const poller = createPubmedPoller({
      baseUrl: `${failing.url}/entrez/eutils/`,
      since: '2024-03-04',
      apiKey: key,
      http: { backoffMs: 5, maxBackoffMs: 10, retries: 2 },
      limiter: new HostRateLimiter(),
      now: clockAt(NOON_MARCH_7).now,
      log,
    });
    const err = (await poller.poll(null).catch((e: unknown) => e)) as Error;
    await failing.close();
    expect(err.message).toMatch(/HTTP 429 after 3 attempts/);
    expect(`${err.message}\n${err.stack}\n${JSON.stringify(err)}`).not.toContain(key);
    expect(log.lines.length).toBeGreaterThan(0);
    expect(log.lines.join('\n')).not.toContain(key);
  });

  it('keeps to NCBI rates: 3 requests a second without a key, 10 with one', async () => {
    const { api, make } = await setup();
    const gaps = () => api.seen.slice(1).map((s, i) => s.at - api.seen[i]!.at);
    await make({ requestsPerSecond: undefined }).poll(null);
    expect(api.seen).toHaveLength(2);
    expect(gaps()[0]).toBeGreaterThanOrEqual(1000 / 3 - 10);
    api.seen.length = 0;
    await make({ requestsPerSecond: undefined, apiKey: 'some-key' }).poll(null);
    expect(gaps()[0]).toBeGreaterThanOrEqual(100 - 10);
    expect(gaps()[0]).toBeLessThan(1000 / 3 - 10);
  });

  it('refuses a cursor it did not write', async () => {
    const { make } = await setup();
    await expect(make().poll('{"v":1,"day":"2024-03-04","mark":"*"}')).rejects.toThrow(/unreadable cursor/);
    await expect(make().poll('not json')).rejects.toThrow(/not JSON/);
  });

  it('re-reads the current day when the query changed under a cursor', async () => {
    const { make, log } = await setup();
    const first = await make().poll(null);
    const page = await make({ query: 'hasabstract' }).poll(first.cursor);
    expect(pmids(page)).toEqual(['38400101', '38400102']);
    expect(log.lines.some((l) => l.includes('query changed'))).toBe(true);
  });
});
