import { afterEach, describe, expect, it } from 'vitest';
import { Feeder } from '../../processors/feeder/feeder.js';
import { feederProcessor } from '../../processors/feeder/processor.js';
import type { RolloutLease } from '../../schemas/rollout-batch.js';
import { TestDriver } from '../../topology/test-driver.js';
import { classifiedQa, mix, poolItems } from './fixtures.js';

const drivers: TestDriver[] = [];
afterEach(async () => {
  for (const d of drivers.splice(0)) await d.close();
});

describe('feeder processor', () => {
  it('fills the pool and the mix from its inputs, and publishes every lease on rollout.batches once', async () => {
    const feeder = Feeder.open(':memory:', { batchSize: 2 });
    const d = await TestDriver.forProcessor(feederProcessor({ feeder, everyMs: 100 }), [
      { name: 'qa.classified', schema: 'classified-qa' },
      { name: 'mix.state', schema: 'mix-state' },
      { name: 'rollout.batches', schema: 'rollout-lease' },
    ]);
    drivers.push(d);
    await d.pipe(
      'qa.classified',
      Array.from({ length: 6 }, (_, i) => ({ key: `cq-${i}`, value: classifiedQa(i, ['Microbiology']) })),
    );
    await d.pipe('mix.state', [
      { key: 'mix', value: mix(1) },
      { key: 'mix', value: mix(3) },
    ]);
    await d.drain();
    expect(feeder.status()).toMatchObject({ pool: 6, mixVersion: 3, selected: 6 });
    const l = feeder.lease({ run: 'p', rank: 0, worldSize: 1 });
    expect(l.status).toBe('leased');
    await d.advanceTime(100);
    await d.advanceTime(100);
    const published = await d.values<RolloutLease>('rollout.batches');
    expect(published.map((b) => b.id)).toEqual(['p/e0/b0']);
    expect(published[0]).toMatchObject({ run: 'p', rank: 0, mixVersion: 3, attempt: 1 });
    // Items by qa id, in slot order, as the lease delivered them.
    if (l.status !== 'leased') throw new Error('not leased');
    expect(published[0]!.items).toEqual(
      l.batch.items.map((it) => ({
        qaId: it.extra_info.qa_id,
        copy: it.extra_info.copy,
        index: it.extra_info.index,
      })),
    );
    // The timer cut the next batches ahead (readyBatches = 2 by default), no more.
    expect(feeder.runStatus('p').batches.ready).toBe(2);
  });

  it('publishes each lease with every slot of its batch as cut, a redelivery after a partial ack too', () => {
    let now = 0;
    const feeder = Feeder.open(':memory:', { batchSize: 3, leaseMs: 1000 }, { now: () => now });
    feeder.addItems(poolItems(40));
    feeder.setMix(mix(1));
    const first = feeder.lease({ run: 'p', rank: 0, worldSize: 1 });
    if (first.status !== 'leased') throw new Error(`not leased: ${first.status}`);
    feeder.ack({ run: 'p', batchId: first.batch.id, leaseId: first.leaseId, slots: [0] });
    now += 2000;
    const again = feeder.lease({ run: 'p', rank: 0, worldSize: 1 });
    if (again.status !== 'leased') throw new Error(`not leased: ${again.status}`);
    expect(again.slots).toEqual([1, 2]);
    const published = feeder.leasesAfter(0).map((l) => l.lease);
    expect(published.map((b) => [b.id, b.attempt])).toEqual([
      [first.batch.id, 1],
      [first.batch.id, 2],
    ]);
    const asCut = first.batch.items.map((it) => it.extra_info.qa_id);
    expect(published[0]!.items.map((it) => it.qaId)).toEqual(asCut);
    expect(published[1]!.items.map((it) => it.qaId)).toEqual(asCut);
    feeder.close();
  });
});
