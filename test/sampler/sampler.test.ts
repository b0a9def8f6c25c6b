import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Analytics, openClickHouse } from '../../analytics/clickhouse.js';
import { insertQa, qaRow, recordRewards } from '../../analytics/qa-store.js';
import { MIX_KEY, samplerProcessor } from '../../processors/sampler/sampler.js';
import { copiesOf, tvd } from '../../processors/sampler/selection.js';
import { normalise, smoothedShares } from '../../processors/sampler/smoothing.js';
import { SamplerConfig } from '../../schemas/config.js';
import type { MixState } from '../../schemas/mix-state.js';
import type { Reference } from '../../schemas/reference.js';
import { TestDriver } from '../../topology/test-driver.js';
import { classifiedOf } from './classified.js';
import { generateItems, REFERENCE } from './generated.js';

const reference: Reference = {
  name: 'generated',
  description: '',
  total: null,
  categories: Object.fromEntries(Object.entries(REFERENCE).map(([c, n]) => [c, { count: n, share: null }])),
};
const taxonomy = { name: 'MeSH Biology', meshYear: 2024 };

describe('the sampler processor', () => {
  let analytics: Analytics;
  beforeAll(async () => {
    analytics = await openClickHouse(`chdb:${join(mkdtempSync(join(tmpdir(), 'sampler-')), 'chdb')}`);
  });
  afterAll(() => analytics.close());

  it('publishes a new version per batch of new items, its rule reproducing the selection', async () => {
    const items = generateItems(2_000, 31);
    const driver = await TestDriver.forProcessor(
      samplerProcessor({ config: SamplerConfig.parse({}), reference, taxonomy, analytics }),
    );
    await driver.pipe(
      'qa.classified',
      items.slice(0, 1_000).map((it, i) => ({ value: classifiedOf(it, i) })),
    );
    await driver.drain();
    await driver.pipe(
      'qa.classified',
      items.slice(1_000).map((it, i) => ({ value: classifiedOf(it, 1_000 + i) })),
    );
    // The same items again (a replayed upstream): nothing new, no new version.
    await driver.pipe(
      'qa.classified',
      items.slice(0, 10).map((it, i) => ({ value: classifiedOf(it, i) })),
    );
    await driver.drain();
    // Batches arriving faster than recomputes pay off are caught up by the timer.
    await driver.advanceTime(500);
    const versions = (await driver.output('mix.state')).length;
    await driver.advanceTime(500);
    expect((await driver.output('mix.state')).length).toBe(versions);
    const out = await driver.output<MixState>('mix.state');
    expect(out.every((r) => r.key === MIX_KEY)).toBe(true);
    const mixes = out.map((r) => r.value);
    expect(mixes.map((m) => m.version)).toEqual(mixes.map((_, i) => i + 1));
    const last = mixes.at(-1)!;
    expect(last.metrics.items).toBe(2_000);
    expect(last.metrics.kept).toBeGreaterThan(0.9);
    expect(last.metrics.tvdTarget).toBeLessThan(0.02);
    const size = items.reduce((s, it) => s + copiesOf(last, it), 0);
    expect(size).toBe(last.metrics.size);
  });

  it('leaves out QA withdrawn by the dedup, whether the withdrawal comes before or after the QA', async () => {
    const items = generateItems(2_000, 37);
    const driver = await TestDriver.forProcessor(
      samplerProcessor({ config: SamplerConfig.parse({}), reference, taxonomy, analytics }),
    );
    const withdraw = (ids: string[]) =>
      driver.pipe(
        'qa.withdrawn',
        ids.map((qaId) => ({ value: { qaId, duplicateOf: 'an-earlier-qa', kind: 'near', similarity: 0.9 } })),
      );
    await driver.pipe(
      'qa.classified',
      items.slice(0, 1_000).map((it, i) => ({ value: classifiedOf(it, i) })),
    );
    await driver.drain();
    // The timer catches up with any batch a recompute skipped (a slow machine skips more).
    await driver.advanceTime(1_000);
    const before = (await driver.values<MixState>('mix.state')).at(-1)!;
    expect(before.metrics.items).toBe(1_000);
    // 100 already in the mix, 50 not yet classified, and one of them again (a replay).
    const gone = [...items.slice(0, 100), ...items.slice(1_500, 1_550)];
    await withdraw([...gone.map((it) => it.id), items[0]!.id]);
    await driver.drain();
    await driver.pipe(
      'qa.classified',
      items.slice(1_000).map((it, i) => ({ value: classifiedOf(it, 1_000 + i) })),
    );
    await driver.drain();
    await driver.advanceTime(1_000);
    const last = (await driver.values<MixState>('mix.state')).at(-1)!;
    expect(last.metrics.items).toBe(2_000 - 150);
    expect(last.metrics.heldOut).toBe(0);
    // The training selection is the rule applied to the QA still in: withdrawn ones count nowhere.
    const goneIds = new Set(gone.map((it) => it.id));
    const size = items.filter((it) => !goneIds.has(it.id)).reduce((n, it) => n + copiesOf(last, it), 0);
    expect(size).toBe(last.metrics.size);
  });

  it('with the reward policy on, moves at most its budget of the α-target toward the topics the model fails', async () => {
    const items = generateItems(3_000, 41);
    const rows = items.map((it, i) => qaRow(classifiedOf(it, i), 0));
    await insertQa(analytics, rows);
    // The model has mastered genetics and fails ecology.
    const rewardOf = (topics: readonly string[]) =>
      topics.includes('ecology') ? 0 : topics.includes('genetics') ? 1 : 0.6;
    await recordRewards(
      analytics,
      items.map((it) => ({ qaId: it.id, run: 'grpo-1', step: 1, reward: rewardOf(it.topics) })),
    );
    const config = SamplerConfig.parse({
      rewardPolicy: { enabled: true, tvdBudget: 0.04, minRewards: 20, refreshMs: 1 },
    });
    const driver = await TestDriver.forProcessor(
      samplerProcessor({ config, reference, taxonomy, analytics }),
    );
    await driver.pipe(
      'qa.classified',
      items.map((it, i) => ({ value: classifiedOf(it, i) })),
    );
    await driver.drain();
    await driver.advanceTime(config.intervalMs);
    const mixes = await driver.values<MixState>('mix.state');
    const moved = mixes.find((m) => m.policy !== null)!;
    expect(moved.reason).toMatch(/reward policy: 0\.040 of the α-target moved from mastered .*genetics/);
    expect(moved.policy!.from.map((m) => m.category)).toContain('genetics');
    expect(moved.policy!.to.map((m) => m.category)).toContain('ecology');
    const alphaTarget = normalise(
      smoothedShares(Object.fromEntries(Object.keys(moved.target).map((c) => [c, REFERENCE[c]!])), 0.5),
    );
    expect(tvd(moved.target, alphaTarget)).toBeCloseTo(0.04, 6);
    expect(moved.target.ecology!).toBeGreaterThan(alphaTarget.ecology!);
    expect(moved.target.genetics!).toBeLessThan(alphaTarget.genetics!);
  });
});
