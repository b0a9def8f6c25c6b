import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ingestProcessor } from '../../processors/ingest.js';
import { pipelineTopology } from '../../processors/pipeline.js';
import { type ConfiguredPoller, configuredPoller, pollAll, pollOnce } from '../../processors/poll.js';
import type { Article } from '../../schemas/index.js';
import { PollerConfig } from '../../schemas/pollers.js';
import { createBiorxivPoller } from '../../sources/pollers/biorxiv.js';
import { HostRateLimiter } from '../../sources/pollers/rate-limit.js';
import { EngineMetrics } from '../../topology/metrics.js';
import { EmbeddedRuntime } from '../../topology/runtime/embedded.js';
import { ProcessorTask } from '../../topology/task.js';
import { readAll } from '../conformance/suite.js';
import { clockAt, type FakeApi, startFakeApi } from '../sources/pollers/fake-api.js';
import { biorxivRoute } from '../sources/pollers/recordings.js';

let api: FakeApi | undefined;
afterEach(async () => {
  await api?.close();
});

const silent = pino({ level: 'silent' });

function biorxiv(url: string): ConfiguredPoller {
  return configuredPoller(
    PollerConfig.parse({ kind: 'biorxiv', since: '2024-03-04' }),
    createBiorxivPoller({
      baseUrl: url,
      since: '2024-03-04',
      requestsPerSecond: 200,
      http: { backoffMs: 5, maxBackoffMs: 20, retries: 2 },
      limiter: new HostRateLimiter(),
      now: clockAt('2024-03-07T12:00:00Z').now,
    }),
  );
}

async function ingestTask(runtime: EmbeddedRuntime) {
  return new ProcessorTask(runtime, pipelineTopology(), ingestProcessor, {
    log: silent,
    metrics: new EngineMetrics(),
  }).open();
}

describe('polling into the log', () => {
  it('commits each page with its cursor, resumes after a restart, and adds nothing once caught up', async () => {
    api = await startFakeApi(biorxivRoute);
    const runtime = EmbeddedRuntime.open(':memory:');
    await runtime.ensureTopics(pipelineTopology().topics);

    // Two pages, then the process "dies": a new task and a new poller pick up the stored cursor.
    const first = await ingestTask(runtime);
    await pollOnce(first, biorxiv(api.url));
    await pollOnce(first, biorxiv(api.url));
    await first.close();
    const afterTwo = (await readAll(runtime, 'articles')).length;
    expect(afterTwo).toBeGreaterThan(0);

    const second = await ingestTask(runtime);
    const rest = await pollAll(second, [biorxiv(api.url)], {
      signal: new AbortController().signal,
      log: silent,
      once: true,
    });
    const articles = (await readAll(runtime, 'articles')).map((r) => r.value as Article);
    expect(articles.length).toBe(afterTwo + rest.counts.articles + rest.counts.updated);
    expect(new Set(articles.map((a) => a.id)).size).toBe(articles.length);
    expect(articles.every((a) => a.source === 'biorxiv')).toBe(true);

    const requestsBefore = api.seen.length;
    const again = await pollAll(second, [biorxiv(api.url)], {
      signal: new AbortController().signal,
      log: silent,
      once: true,
    });
    expect(again).toEqual({
      counts: { articles: 0, updated: 0, duplicates: 0, deadLetters: 0 },
      stalled: [],
      paused: [],
    });
    // Caught up on closed days: no request at all until the next day closes.
    expect(api.seen.length).toBe(requestsBefore);
    await second.close();
    await runtime.close();
  });
});
