import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cli, FIXTURES, workspace } from '../e2e/helpers.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, start } from '../llm-server/server.js';
import { classifiedOf } from '../sampler/classified.js';
import { generateItems } from '../sampler/generated.js';
import { CHROMIUM } from '../setup/tools.js';
import { until } from '../until.js';
import { metricNames, parsePrometheus, sampleValue } from './prometheus.js';

// Real Chromium (Debian's chromium, driven by playwright-core) against `bioalchemy run` on a
// workspace: fixture articles through the test LLM server (LLM calls, rejections, dead letters),
// 2,000 classified QA produced straight into qa.classified (the sampler's mix), a trainer's lease
// and ack with rewards. Screenshots go to test-artifacts/screenshots (CI keeps them).

// The page's globals inside page.evaluate (this project's tsconfig has no DOM lib).
// biome-ignore lint/suspicious/noExplicitAny: browser globals, typed by the page
declare const window: any;
// biome-ignore lint/suspicious/noExplicitAny: browser globals, typed by the page
declare const document: any;

export const SCREENSHOTS = new URL('../../test-artifacts/screenshots/', import.meta.url).pathname;

/** A line of the child's JSON logs matching `msg`, within the deadline. */
function logLine(child: ChildProcess, msg: string, deadlineMs = 60_000): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(
      () => reject(new Error(`no "${msg}" log line in ${deadlineMs} ms:\n${buffer}`)),
      deadlineMs,
    );
    child.stderr!.on('data', (chunk: Buffer) => {
      buffer += chunk;
      for (const line of buffer.split('\n')) {
        if (!line.includes(`"msg":"${msg}"`)) continue;
        clearTimeout(timer);
        resolve(JSON.parse(line) as Record<string, unknown>);
        return;
      }
    });
  });
}

interface Snapshot {
  totals: { qa: number; accepted: number; mixVersion: number | null; deadLetters: number };
  llm: { usage: { stage: string; calls: number }[] };
  feeder: { ranks: { acked: number }[]; rewardByTopic: { data: (number | null)[] }[] };
  drift: { t: number[] };
  processors: { name: string; committed: number }[];
}

const seriesOf = (page: Page, id: string) =>
  page.evaluate((chartId) => {
    const el = document.getElementById(chartId);
    // biome-ignore lint/suspicious/noExplicitAny: the page's global ECharts
    const option = (window as any).echarts.getInstanceByDom(el).getOption();
    return {
      series: (option.series as { name: string; data: unknown[] }[]).map((s) => ({
        name: s.name,
        data: s.data,
      })),
      categories: ((option.xAxis?.[0]?.data ?? option.yAxis?.[0]?.data ?? []) as string[]).slice(),
    };
  }, id);

const numbersIn = (data: unknown[]): number[] =>
  data
    .map((d) => (Array.isArray(d) ? d[1] : d))
    .filter((v): v is number => typeof v === 'number' && Number.isFinite(v));

describe('the dashboard in Chromium, against a running pipeline', () => {
  let llm: LlmServer;
  let browser: Browser;
  let child: ChildProcess;
  let exited: Promise<number | null>;
  let dashboard: string;
  let feederUrl: string;
  let ws: { dir: string; config: string };
  const items = generateItems(2000, 5, 'dash');

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    llm = await start({ responder: pipelineResponder });
    ws = workspace(llm.url, { dashboard: { refreshMs: 500 } });
    // Prices and a cap, so spend shows against it.
    const config = JSON.parse((await import('node:fs')).readFileSync(ws.config, 'utf8'));
    config.llm = {
      ...config.llm,
      inputUsdPerMillion: 150,
      outputUsdPerMillion: 600,
      budget: { usdPerDay: 100 },
    };
    (await import('node:fs')).writeFileSync(ws.config, JSON.stringify(config));
    expect(
      cli(['ingest', `${FIXTURES}jats`, `${FIXTURES}medline/pubmed-sample.xml`, '--config', ws.config])
        .status,
    ).toBe(0);
    const lines = items.map((it, i) => JSON.stringify(classifiedOf(it, i))).join('\n');
    expect(cli(['produce', 'qa.classified', '--config', ws.config], lines).status).toBe(0);
    child = spawn(
      process.execPath,
      [BIN, 'run', '--config', ws.config, '--port', '0', '--dashboard-port', '0'],
      {
        env: { ...process.env, E2E_LLM_KEY: 'test-key', BIOALCHEMY_LOG_LEVEL: 'info' },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
    const [d, f] = await Promise.all([logLine(child, 'dashboard'), logLine(child, 'feeder API')]);
    dashboard = d.url as string;
    feederUrl = f.url as string;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await llm?.stop();
    if (child && child.exitCode === null) {
      child.kill('SIGINT');
      await exited;
    }
  });

  const snapshot = async (): Promise<Snapshot> =>
    (await (await fetch(`${dashboard}/api/snapshot?window=3600`)).json()) as Snapshot;

  it('shows every panel with the data the pipeline made, and a record produced meanwhile without a reload', async () => {
    // The pipeline's work first: the 2,000 QA counted, a mix published, LLM calls accounted, the
    // classify stage's among them (the CI run under load drew the page before they were).
    await until('the QA counted, a mix published, classify calls accounted', async () => {
      const s = await snapshot();
      return s.totals.qa >= 2000 &&
        s.totals.mixVersion !== null &&
        s.llm.usage.some((u) => u.stage === 'classify')
        ? s
        : undefined;
    });
    // A trainer leases a batch and acks it with rewards.
    const lease = await until('a batch to lease', async () => {
      const r = await fetch(`${feederUrl}/v1/lease`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ run: 'grpo-test', rank: 0, worldSize: 1, batchSize: 16 }),
      });
      const body = (await r.json()) as {
        status: string;
        leaseId?: string;
        batch?: { id: string; items: unknown[] };
      };
      return r.ok && body.status === 'leased' ? body : undefined;
    });
    const ack = await fetch(`${feederUrl}/v1/ack`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        run: 'grpo-test',
        batchId: lease.batch!.id,
        leaseId: lease.leaseId,
        step: 1,
        rewards: lease.batch!.items.map((_, i) => i % 2),
        // Two rollouts a slot, both with the slot's reward: every group is flat (issue 44's table).
        rollouts: lease.batch!.items.map((_, i) => ({ count: 2, rewards: [i % 2, i % 2] })),
      }),
    });
    expect(ack.status, await ack.clone().text()).toBe(200);
    const ready = await until('rewards in ClickHouse', async () => {
      const s = await snapshot();
      const rewarded = s.feeder.rewardByTopic.some((r) => r.data.some((v) => v !== null));
      return rewarded && s.feeder.ranks.some((r) => r.acked > 0) && s.totals.deadLetters > 0 ? s : undefined;
    });
    expect(ready.processors.find((p) => p.name === 'count-sink')!.committed).toBeGreaterThanOrEqual(2000);

    const page = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(dashboard);
    await page.waitForFunction(
      () => (window as unknown as { __dashboard: { snapshots: number } }).__dashboard.snapshots > 0,
    );
    const qaShown = Number((await page.textContent('#qa-total'))!.replace(/,/g, ''));
    expect(qaShown).toBeGreaterThanOrEqual(2000);

    const topics = await seriesOf(page, 'chart-topics');
    expect(topics.categories).toContain('Genetics');
    const dataset = topics.series.find((s) => s.name === 'dataset')!;
    expect(numbersIn(dataset.data).filter((v) => v > 0).length).toBeGreaterThanOrEqual(12);
    expect(topics.series.map((s) => s.name)).toEqual(
      expect.arrayContaining(['reference', 'target mix (α = 0.5)']),
    );
    const drift = await seriesOf(page, 'chart-drift');
    expect(drift.series).toHaveLength(4);
    for (const s of drift.series) expect(numbersIn(s.data).length).toBeGreaterThan(0);
    const bySource = await seriesOf(page, 'chart-qa-source');
    expect(bySource.series.map((s) => s.name)).toEqual(
      expect.arrayContaining(['asm', 'plos-compbio', 'plos-genetics', 'semantic-scholar']),
    );
    expect(numbersIn(bySource.series.flatMap((s) => s.data)).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    const articles = await seriesOf(page, 'chart-articles-source');
    expect(numbersIn(articles.series.flatMap((s) => s.data)).some((v) => v > 0)).toBe(true);
    const journals = await seriesOf(page, 'chart-qa-journal');
    expect(journals.series.map((s) => s.name)).toContain('Generated Journal');
    const dead = await seriesOf(page, 'chart-dead-letters');
    expect(numbersIn(dead.series[0]!.data).reduce((a, b) => a + b, 0)).toBe(ready.totals.deadLetters);
    // One row per code and processor (a code of the closed list), each opening to its reasons.
    for (const row of dead.categories) expect(row).toMatch(/^[a-z-]+( · [a-z/-]+)?$/);
    const rows = page.locator('#dead-letter-reasons details');
    expect(await rows.count()).toBe(dead.categories.length);
    const first = rows.first();
    expect(await first.locator('summary').textContent()).toContain(dead.categories[0]!);
    expect(await first.locator('li').first().isVisible()).toBe(false);
    await first.locator('summary').click();
    expect(await first.locator('li').first().isVisible()).toBe(true);
    expect((await first.locator('li').first().textContent())!.trim()).toMatch(/^\d+\s+\S/);
    // A snapshot drawn between a click and its toggle event (queued as a task) keeps the row open:
    // the CI run under load saw a row rebuilt closed there.
    const openAfterRedraw = await page.evaluate(() => {
      const row = () => document.querySelector('#dead-letter-reasons details');
      const seen = [];
      for (let i = 0; i < 2; i++) {
        row().querySelector('summary').click();
        (window as unknown as { __dashboard: { redraw(): void } }).__dashboard.redraw();
        seen.push(row().open);
      }
      return seen;
    });
    expect(openAfterRedraw).toEqual([false, true]);
    const processors = await seriesOf(page, 'chart-processors');
    expect(processors.categories).toEqual(
      expect.arrayContaining(['extract', 'grade', 'classify', 'count-sink', 'sampler', 'feeder']),
    );
    const usage = await seriesOf(page, 'chart-llm-usage');
    expect(usage.categories.some((c) => c.startsWith('classify'))).toBe(true);
    expect(numbersIn(usage.series.find((s) => s.name === 'paid calls')!.data).some((v) => v > 0)).toBe(true);
    const cost = await seriesOf(page, 'chart-llm-cost');
    expect(numbersIn(cost.series.flatMap((s) => s.data)).some((v) => v > 0)).toBe(true);
    expect(cost.series.map((s) => s.name).join(' ')).toMatch(/spent today \$[\d.]+ of cap/);
    const feeder = await seriesOf(page, 'chart-feeder');
    expect(feeder.categories).toContain('grpo-test · rank 0');
    expect(numbersIn(feeder.series.find((s) => s.name === 'acked')!.data)).toEqual([1]);
    const rewards = await seriesOf(page, 'chart-rewards');
    expect(numbersIn(rewards.series.flatMap((s) => s.data)).length).toBeGreaterThan(0);
    const n = lease.batch!.items.length;
    const difficulty = await page.$$eval('#feeder-difficulty tr', (rows) =>
      rows.map((r) => [...r.querySelectorAll('td')].map((c) => c.textContent)),
    );
    expect(difficulty).toContainEqual(['grpo-test', String(2 * n), String(n), '0']);
    await page.screenshot({ path: join(SCREENSHOTS, 'dashboard.png'), fullPage: true });

    // A record produced while the page is open: a new source appears, the totals move, no reload.
    await page.evaluate(() => {
      (window as unknown as { __sameDocument: boolean }).__sameDocument = true;
    });
    const live = generateItems(25, 77, 'live').map((it, i) => ({ ...it, source: 'live-source', i }));
    const lines = live.map((it) => JSON.stringify(classifiedOf(it, it.i))).join('\n');
    expect(cli(['produce', 'qa.classified', '--config', ws.config], lines).status).toBe(0);
    await page.waitForFunction(
      (before) => Number(document.getElementById('qa-total')!.textContent!.replace(/,/g, '')) >= before + 25,
      qaShown,
      { timeout: 30_000 },
    );
    await until('the new source on the chart', async () => {
      const s = await seriesOf(page, 'chart-qa-source');
      return s.series.some((x) => x.name === 'live-source') ? true : undefined;
    });
    expect(
      await page.evaluate(() => (window as unknown as { __sameDocument?: boolean }).__sameDocument),
    ).toBe(true);
    await page.screenshot({ path: join(SCREENSHOTS, 'dashboard-live.png'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  }, 240_000);

  it('/metrics parses as Prometheus text and its counters move with the traffic', async () => {
    const scrape = async () => parsePrometheus(await (await fetch(`${dashboard}/metrics`)).text());
    const before = await scrape();
    // At least the 2,000 produced before: the first test's live records are its own business, so
    // a failure there is not reported twice.
    const counted = sampleValue(before, 'bioalchemy_records_in_total', { processor: 'count-sink' });
    expect(counted).toBeGreaterThanOrEqual(items.length);
    expect(
      sampleValue(before, 'bioalchemy_feeder_rank_batches', { run: 'grpo-test', rank: '0', state: 'acked' }),
    ).toBe(1);
    expect(metricNames(before).has('bioalchemy_mix_tvd_reference')).toBe(true);
    expect([...before.keys()].some((k) => k.startsWith('bioalchemy_llm_latency_seconds_bucket{'))).toBe(true);
    const more = generateItems(10, 78, 'more').map((it, i) => JSON.stringify(classifiedOf(it, i)));
    expect(cli(['produce', 'qa.classified', '--config', ws.config], more.join('\n')).status).toBe(0);
    await until('count-sink counter up by 10', async () => {
      const after = await scrape();
      return sampleValue(after, 'bioalchemy_records_in_total', { processor: 'count-sink' }) >= counted + 10
        ? true
        : undefined;
    });
  }, 60_000);
});
