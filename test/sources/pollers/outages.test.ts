import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { Analytics } from '../../../analytics/clickhouse.js';
import { ingestProcessor } from '../../../processors/ingest.js';
import { pipelineTopology } from '../../../processors/pipeline.js';
import {
  type ConfiguredPoller,
  configuredPoller,
  pollAll,
  readPollerStates,
  skipPage,
} from '../../../processors/poll.js';
import type { Article } from '../../../schemas/article.js';
import type { DeadLetter } from '../../../schemas/dead-letter.js';
import { PollerConfig } from '../../../schemas/pollers.js';
import { pollerViews } from '../../../server/dashboard-data.js';
import { registerDashboardMetrics } from '../../../server/dashboard-metrics.js';
import { createBiorxivPoller } from '../../../sources/pollers/biorxiv.js';
import { createPubmedPoller } from '../../../sources/pollers/pubmed.js';
import { HostRateLimiter } from '../../../sources/pollers/rate-limit.js';
import { EngineMetrics } from '../../../topology/metrics.js';
import { EmbeddedRuntime } from '../../../topology/runtime/embedded.js';
import { ProcessorTask } from '../../../topology/task.js';
import { readAll } from '../../conformance/suite.js';
import { until } from '../../until.js';
import { clockAt, type FakeApi, fixture, json, type Route, startFakeApi } from './fake-api.js';
import { biorxivRoute, pubmedRoute } from './recordings.js';

// Outages as the services have them, through the ingest task and the log as `poll` and `run`
// drive them: nothing of a day is lost, nothing is skipped unless an operator says so.

const silent = pino({ level: 'silent' });
const MINUTE = 60_000;
let api: FakeApi | undefined;
let runtime: EmbeddedRuntime | undefined;
afterEach(async () => {
  await api?.close();
  await runtime?.close();
  api = undefined;
  runtime = undefined;
});

async function setup(route: Route) {
  api = await startFakeApi(route);
  runtime = EmbeddedRuntime.open(':memory:');
  await runtime.ensureTopics(pipelineTopology().topics);
  const clock = clockAt('2024-03-07T12:00:00Z');
  const task = () =>
    new ProcessorTask(runtime!, pipelineTopology(), ingestProcessor, {
      log: silent,
      metrics: new EngineMetrics(),
    }).open();
  const http = { backoffMs: 1, maxBackoffMs: 2, retries: 1 };
  const pubmed = (): ConfiguredPoller => {
    const config = PollerConfig.parse({ kind: 'pubmed', since: '2024-03-04', query: 'all[sb]', pageSize: 2 });
    return configuredPoller(
      config,
      createPubmedPoller({
        ...config,
        baseUrl: `${api!.url}/entrez/eutils/`,
        requestsPerSecond: 1000,
        apiKey: '',
        http,
        limiter: new HostRateLimiter(),
        now: clock.now,
      }),
    );
  };
  const biorxiv = (): ConfiguredPoller => {
    const config = PollerConfig.parse({ kind: 'biorxiv', since: '2024-03-04' });
    return configuredPoller(
      config,
      createBiorxivPoller({
        ...config,
        baseUrl: api!.url,
        requestsPerSecond: 1000,
        http,
        limiter: new HostRateLimiter(),
        now: clock.now,
      }),
    );
  };
  const articles = async () => (await readAll(runtime!, 'articles')).map((r) => r.value as Article);
  const deadLetters = async () => (await readAll(runtime!, 'dlq')).map((r) => r.value as DeadLetter);
  return { api: api!, runtime, clock, task, pubmed, biorxiv, articles, deadLetters };
}

const once = { signal: new AbortController().signal, log: silent, once: true };
const advance = (clock: { now: () => Date; set: (iso: string) => void }, ms: number) =>
  clock.set(new Date(clock.now().getTime() + ms).toISOString());

describe('pollers through upstream outages', () => {
  it("a 5-poll NCBI outage (200 with ESearch's ERROR) ends with every PMID of the day ingested, nothing skipped", async () => {
    let outage = 5;
    const route: Route = (req, s) =>
      outage > 0 && req.path.endsWith('esearch.fcgi')
        ? json(fixture('faults/esearch-error.json'))
        : pubmedRoute(req, s);
    const { api, clock, task, pubmed, articles, deadLetters, runtime } = await setup(route);
    const ingest = await task();
    const started = clock.now().toISOString();
    for (let poll = 1; poll <= 5; poll++) {
      // Each poll a new poller, as a cron'd `poll --once` would have: only the log remembers.
      const summary = await pollAll(ingest, [pubmed()], { ...once, now: clock.now });
      outage--;
      expect(summary.counts.articles).toBe(0);
      expect(summary.stalled).toHaveLength(1);
      expect(summary.stalled[0]!.stalled).toMatchObject({
        since: started,
        attempts: poll,
        reason:
          "NCBI ESearch: Search Backend failed: Couldn't resolve #pmsearch3.pmsearch.ext, the address table is empty.",
      });
      // The cursor stays at the day's start.
      expect(summary.stalled[0]!.cursor).toBeNull();
      advance(clock, 20 * MINUTE);
    }
    const [stalled] = await readPollerStates(runtime!);
    expect(stalled).toMatchObject({
      poller: 'pubmed',
      cursor: null,
      stalled: { attempts: 5, since: started },
    });

    const recovered = await pollAll(ingest, [pubmed()], { ...once, now: clock.now });
    expect(recovered.stalled).toEqual([]);
    const pmids = (await articles()).map((a) => a.pmid).sort();
    // Every PMID of EDAT 2024-03-04, then 2024-03-05's.
    expect(pmids).toEqual(['38400101', '38400102', '38400103', '38400104', '38400105', '38410001']);
    expect(await deadLetters()).toEqual([]);
    const [state] = await readPollerStates(runtime!);
    expect(state!.stalled).toBeNull();
    // Five failed listings, then one per closed day.
    expect(api.seen.filter((s) => s.path.endsWith('esearch.fcgi'))).toHaveLength(5 + 2);
    await ingest.close();
  });

  it('a bioRxiv empty-body outage inside a running poll is retried with a growing backoff until every record is in', async () => {
    let outage = true;
    const route: Route = (req, s) =>
      outage && req.path.includes('/details/')
        ? json(fixture('faults/biorxiv-empty-body.json'))
        : biorxivRoute(req, s);
    const { clock, task, biorxiv, articles, deadLetters, runtime } = await setup(route);
    const ingest = await task();
    const stop = new AbortController();
    const waits: number[] = [];
    const states: (string | null)[] = [];
    // The clock moves by each wait: the backoff is observed without sleeping through it.
    const wait = async (ms: number) => {
      waits.push(ms);
      const [state] = await readPollerStates(runtime!);
      states.push(state!.stalled?.reason ?? null);
      advance(clock, ms);
      if (waits.length === 4) outage = false;
      // Caught up: the next wait is the idle one.
      if (!outage && ms === 15 * MINUTE) stop.abort();
    };
    const summary = await pollAll(ingest, [biorxiv()], {
      signal: stop.signal,
      log: silent,
      now: clock.now,
      wait,
    });
    expect(waits).toEqual([30_000, 60_000, 120_000, 240_000, 15 * MINUTE]);
    expect(states.slice(0, 4)).toEqual(Array(4).fill('empty body (HTTP 200)'));
    expect(states[4]).toBeNull();
    expect(summary.stalled).toEqual([]);
    expect((await articles()).map((a) => a.doi).sort()).toEqual([
      '10.1101/2024.02.20.581234',
      '10.1101/2024.03.01.583001',
      '10.1101/2024.03.02.583102',
      '10.1101/2024.03.03.583350',
      '10.1101/2024.03.04.583411',
    ]);
    expect(await deadLetters()).toEqual([]);
    await ingest.close();
  });

  it('a 1-hour Retry-After is honoured by the next poll and by a restarted process', async () => {
    let limited = true;
    const route: Route = (req, s) =>
      limited
        ? { status: 429, headers: { 'retry-after': '3600' }, body: fixture('faults/ncbi-429.json') }
        : pubmedRoute(req, s);
    const { api, clock, task, pubmed, articles } = await setup(route);
    const first = await task();
    const asked = await pollAll(first, [pubmed()], { ...once, now: clock.now });
    expect(asked.paused).toEqual([
      {
        poller: 'pubmed',
        cursorKey: expect.stringMatching(/^pubmed:/),
        paused: {
          until: '2024-03-07T13:00:00.000Z',
          host: new URL(api.url).host,
          reason: 'HTTP 429 with Retry-After 3600 s',
        },
      },
    ]);
    const calls = api.seen.length;
    expect(calls).toBe(1);
    limited = false;

    // 10 minutes later, the next poll asks nothing.
    advance(clock, 10 * MINUTE);
    const paused = await pollAll(first, [pubmed()], { ...once, now: clock.now });
    expect(paused.paused).toHaveLength(1);
    expect(api.seen.length).toBe(calls);
    await first.close();

    // A restarted process 59 minutes in still waits; one after the hour reads.
    advance(clock, 49 * MINUTE);
    const restarted = await task();
    expect((await pollAll(restarted, [pubmed()], { ...once, now: clock.now })).paused).toHaveLength(1);
    expect(api.seen.length).toBe(calls);
    advance(clock, 2 * MINUTE);
    const after = await pollAll(restarted, [pubmed()], { ...once, now: clock.now });
    expect(after.paused).toEqual([]);
    expect((await articles()).map((a) => a.pmid)).toHaveLength(6);
    await restarted.close();
  });

  it('a Retry-After short enough to wait out in memory is kept with the cursor first: a process dying in the wait leaves the next one waiting too', async () => {
    let limited = true;
    const route: Route = (req, s) =>
      limited
        ? { status: 429, headers: { 'retry-after': '60' }, body: fixture('faults/ncbi-429.json') }
        : pubmedRoute(req, s);
    const { api, clock, task, pubmed, articles, runtime } = await setup(route);
    const first = await task();
    const dies = new AbortController();
    // 60 s is under maxRetryAfterMs: the poll waits it out in memory (real time), and dies in it.
    const polling = pollAll(first, [pubmed()], { signal: dies.signal, log: silent, now: clock.now });
    const [kept] = await until(
      'the short pause stored',
      async () => {
        const states = await readPollerStates(runtime!);
        return states[0]?.paused ? states : undefined;
      },
      10_000,
    );
    expect(kept!.paused).toEqual({
      until: '2024-03-07T12:01:00.000Z',
      host: new URL(api.url).host,
      reason: 'HTTP 429 with Retry-After 60 s',
    });
    dies.abort();
    await polling;
    await first.close();
    limited = false;
    const calls = api.seen.length;
    expect(calls).toBe(1);

    // Another process 30 s later (its own rate limiter, nothing in memory) asks nothing.
    advance(clock, 30_000);
    const restarted = await task();
    const paused = await pollAll(restarted, [pubmed()], { ...once, now: clock.now });
    expect(paused.paused.map((p) => p.paused.until)).toEqual(['2024-03-07T12:01:00.000Z']);
    expect(api.seen.length).toBe(calls);
    advance(clock, 31_000);
    const after = await pollAll(restarted, [pubmed()], { ...once, now: clock.now });
    expect(after.paused).toEqual([]);
    expect(await articles()).toHaveLength(6);
    expect((await readPollerStates(runtime!))[0]!.paused).toBeNull();
    await restarted.close();
  });

  it('5xx and time-outs past the HTTP retries stall the poller with the cursor kept, then it reads on', async () => {
    let fault: 'unavailable' | 'slow' | null = 'unavailable';
    const route: Route = (req, s) =>
      fault === 'unavailable'
        ? { status: 503, body: '<html>Service Unavailable</html>' }
        : fault === 'slow'
          ? { ...biorxivRoute(req, s), delayMs: 400 }
          : biorxivRoute(req, s);
    const { clock, task, biorxiv, articles, deadLetters } = await setup(route);
    const ingest = await task();
    const first = await pollAll(ingest, [biorxiv()], { ...once, now: clock.now });
    expect(first.stalled[0]!.stalled.reason).toMatch(/: HTTP 503 after 2 attempts$/);
    fault = 'slow';
    const config = PollerConfig.parse({ kind: 'biorxiv', since: '2024-03-04' });
    const impatient = configuredPoller(
      config,
      createBiorxivPoller({
        ...config,
        baseUrl: api!.url,
        requestsPerSecond: 1000,
        http: { backoffMs: 1, maxBackoffMs: 2, retries: 1, timeoutMs: 100 },
        limiter: new HostRateLimiter(),
        now: clock.now,
      }),
    );
    const second = await pollAll(ingest, [impatient], { ...once, now: clock.now });
    expect(second.stalled[0]!.stalled).toMatchObject({
      attempts: 2,
      reason: expect.stringMatching(/: timed out after 2 attempts$/),
    });
    fault = null;
    const third = await pollAll(ingest, [biorxiv()], { ...once, now: clock.now });
    expect(third.stalled).toEqual([]);
    expect(await articles()).toHaveLength(5);
    expect(await deadLetters()).toEqual([]);
    await ingest.close();
  });

  it('a half-valid page: valid records become articles, each invalid one a dead letter with its position, and the cursor moves past the page', async () => {
    const route: Route = (req, s) => {
      if (!req.path.endsWith('/2024-03-04/0/json')) return biorxivRoute(req, s);
      const page = JSON.parse(fixture('biorxiv/details-2024-03-04-0.json')) as {
        collection: Record<string, unknown>[];
      };
      page.collection[1]!.title = 42;
      page.collection[1]!.date = null;
      return json(JSON.stringify(page));
    };
    const { task, biorxiv, articles, deadLetters, runtime } = await setup(route);
    const ingest = await task();
    const p = biorxiv();
    await pollAll(ingest, [p], { ...once, now: clockAt('2024-03-07T12:00:00Z').now });
    expect((await articles()).map((a) => a.doi)).toContain('10.1101/2024.03.01.583001');
    expect((await articles()).map((a) => a.doi)).not.toContain('10.1101/2024.03.02.583102');
    const dead = await deadLetters();
    expect(dead).toHaveLength(1);
    expect(dead[0]!.reason).toMatch(/^unexpected record 1: /);
    expect(dead[0]!.payload).toContain('10.1101/2024.03.02.583102');
    // Every record of the day accounted for: 5 of them, 4 articles and 1 dead letter.
    expect(await articles()).toHaveLength(4);
    const [state] = await readPollerStates(runtime!);
    expect(JSON.parse(state!.cursor!)).toMatchObject({ day: '2024-03-06', offset: 0 });
    await ingest.close();
  });

  it("gives a page up only on an operator's --skip, with a dead letter saying who skipped what and why", async () => {
    const route: Route = (req, s) =>
      req.path.endsWith('/2024-03-04/2/json')
        ? json(fixture('faults/biorxiv-empty-body.json'))
        : biorxivRoute(req, s);
    const { clock, task, biorxiv, articles, deadLetters, runtime } = await setup(route);
    const ingest = await task();
    const p = biorxiv();
    const stuck = await pollAll(ingest, [p], { ...once, now: clock.now });
    expect(stuck.stalled).toHaveLength(1);
    const cursor = stuck.stalled[0]!.cursor!;
    await expect(
      skipPage(ingest, p, { expected: '{"v":1}', who: 'ops@lab', now: clock.now() }),
    ).rejects.toThrow(/is at cursor .*nothing skipped/);
    const skip = await skipPage(ingest, p, { expected: cursor, who: 'ops@lab', now: clock.now() });
    expect(skip.skipped).toBe('biorxiv records 2 onward of 2024-03-04');
    const dead = await deadLetters();
    expect(dead).toHaveLength(1);
    expect(dead[0]!.reason).toBe(
      `skipped by operator ops@lab: biorxiv records 2 onward of 2024-03-04 (stalled since 2024-03-07T12:00:00.000Z after 1 attempt(s): empty body (HTTP 200))`,
    );
    expect(dead[0]!.processor).toBe('sources/biorxiv');
    expect(dead[0]!.code).toBe('skipped-by-operator');
    const [state] = await readPollerStates(runtime!);
    expect(state).toMatchObject({ stalled: null, cursor: skip.cursor });
    const done = await pollAll(ingest, [p], { ...once, now: clock.now });
    expect(done.stalled).toEqual([]);
    expect((await articles()).map((a) => a.doi)).toEqual([
      '10.1101/2024.03.01.583001',
      '10.1101/2024.03.02.583102',
    ]);
    await ingest.close();
  });

  it('shows a stalled poller on /metrics (with its alert threshold) and in the dashboard data, from the log alone', async () => {
    const route: Route = (req, s) =>
      req.path.endsWith('esearch.fcgi') ? json(fixture('faults/esearch-error.json')) : pubmedRoute(req, s);
    const { clock, task, pubmed, runtime } = await setup(route);
    const ingest = await task();
    // Stalled since two hours ago (the clock of the polls), read now: past the default hour.
    clock.set(new Date(Date.now() - 2 * 60 * MINUTE).toISOString());
    await pollAll(ingest, [pubmed()], { ...once, now: clock.now });
    await ingest.close();
    const registry = new Registry();
    registerDashboardMetrics(registry, { analytics: {} as Analytics, runtime: runtime! });
    const text = await registry.metrics();
    const value = (name: string) =>
      Number(new RegExp(`^${name}\\{poller="pubmed",key="pubmed:[^"]+"\\} (\\S+)$`, 'm').exec(text)?.[1]);
    expect(value('bioalchemy_poller_stalled_seconds')).toBeGreaterThanOrEqual(2 * 3600 - 60);
    expect(value('bioalchemy_poller_stall_alert_after_seconds')).toBe(3600);
    expect(value('bioalchemy_poller_paused_seconds')).toBe(0);
    const [view] = pollerViews(await readPollerStates(runtime!), new Date());
    expect(view).toMatchObject({
      poller: 'pubmed',
      state: 'stalled',
      alerting: true,
      stalled: { reason: expect.stringMatching(/^NCBI ESearch: Search Backend failed/) },
    });
  });
});
