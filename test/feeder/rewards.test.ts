import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Analytics, openClickHouse } from '../../analytics/clickhouse.js';
import { insertQa } from '../../analytics/qa-store.js';
import { Feeder } from '../../processors/feeder/feeder.js';
import { feederProcessor } from '../../processors/feeder/processor.js';
import { formatRewards, rewardsOverTime } from '../../processors/feeder/rewards-report.js';
import { TestDriver } from '../../topology/test-driver.js';
import { qa } from '../analytics/rows.js';
import { classifiedQa, mix } from './fixtures.js';

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

describe('rewards from acks to ClickHouse', () => {
  it('writes acked rewards through the processor and reports them by topic over time', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'feeder-chdb-'));
    const analytics: Analytics = await openClickHouse(`chdb:${dir}`);
    cleanup.push(
      () => rm(dir, { recursive: true, force: true }),
      () => analytics.close(),
    );
    const feeder = Feeder.open(':memory:', { batchSize: 4 });
    const d = await TestDriver.forProcessor(feederProcessor({ feeder, analytics, everyMs: 100 }), [
      { name: 'qa.classified', schema: 'classified-qa' },
      { name: 'mix.state', schema: 'mix-state' },
      { name: 'rollout.batches', schema: 'rollout-lease' },
    ]);
    cleanup.push(() => d.close());
    const topics = (i: number) => (i % 2 ? ['Genetics'] : ['Microbiology']);
    await d.pipe(
      'qa.classified',
      Array.from({ length: 4 }, (_, i) => ({ value: classifiedQa(i, topics(i)) })),
    );
    await d.pipe('mix.state', [{ value: mix(1) }]);
    await d.drain();
    await insertQa(
      analytics,
      Array.from({ length: 4 }, (_, i) => qa(`cq-${i}`, topics(i))),
    );
    const l = feeder.lease({ run: 'grpo', rank: 0, worldSize: 1 });
    if (l.status !== 'leased') throw new Error('no lease');
    const rewards = l.batch.items.map((it) => (it.extra_info.topics.includes('Genetics') ? 1 : 0.25));
    feeder.ack({ run: 'grpo', batchId: l.batch.id, leaseId: l.leaseId, rewards });
    await d.advanceTime(100);
    expect(feeder.pendingRewards().rows).toEqual([]);
    const rows = await rewardsOverTime(analytics, { every: 'minute' });
    expect(rows.map((r) => [r.run, r.category, r.meanReward, r.n])).toEqual([
      ['grpo', 'Genetics', 1, 2],
      ['grpo', 'Microbiology', 0.25, 2],
    ]);
    expect(await rewardsOverTime(analytics, { run: 'other' })).toEqual([]);
    expect(formatRewards(rows)).toMatch(/grpo +Genetics +1\.000 +2/);
  });
});
