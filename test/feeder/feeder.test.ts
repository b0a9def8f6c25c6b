import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { Feeder } from '../../processors/feeder/feeder.js';
import { FeederError } from '../../processors/feeder/feeder-error.js';
import { epochOrder, epochSeed } from '../../processors/feeder/order.js';
import { copiesOf, heldOutArticles } from '../../processors/sampler/selection.js';
import { FeederConfig } from '../../schemas/feeder.js';
import { RolloutBatch } from '../../schemas/rollout-batch.js';
import { mix, poolItems, trainCopies } from './fixtures.js';
import { clock, feederWith, leased, openFeeder } from './setup.js';

/** Leases and acks rank's batches until its epoch ends; returns the items' qa ids in order. */
function drainRank(feeder: Feeder, run: string, rank: number, worldSize: number): string[] {
  const ids: string[] = [];
  for (;;) {
    const r = feeder.lease({ run, rank, worldSize });
    if (r.status === 'epoch-end') return ids;
    const l = leased(r);
    ids.push(...l.batch.items.map((i) => i.extra_info.qa_id));
    feeder.ack({ run, batchId: l.batch.id, leaseId: l.leaseId });
  }
}

describe('feeder', () => {
  it('an epoch covers every selected item its number of copies, held-out articles never', () => {
    const items = poolItems(200);
    const feeder = feederWith(200);
    const got = [0, 1, 2].flatMap((rank) => drainRank(feeder, 'cover', rank, 3));
    const copies = trainCopies(items, mix(1));
    const expected = items.flatMap((it) => Array<string>(copies(it)).fill(it.id));
    expect(expected.length).toBeGreaterThan(100);
    expect(items.some((it) => copies(it) === 2)).toBe(true);
    // Every copy once; the last round repeats fewer than worldSize of the epoch's first slots.
    const count = (ids: string[], id: string) => ids.filter((x) => x === id).length;
    for (const it of items) expect(count(got, it.id), it.id).toBeGreaterThanOrEqual(count(expected, it.id));
    expect(new Set(got)).toEqual(new Set(expected));
    expect(got.length - expected.length).toBeLessThan(3);
    // A QA of a held-out article is never leased, whatever its own topics.
    const held = heldOutArticles(items, mix(1).heldOut);
    const kept = items.filter((it) => held.has(it.articleId) && !it.topics.includes('Botany'));
    expect(kept.some((it) => copiesOf(mix(1), it) > 0)).toBe(true);
    expect(got.filter((id) => held.has(items.find((i) => i.id === id)!.articleId))).toEqual([]);
    expect(feeder.runStatus('cover')).toMatchObject({ ackedItems: got.length, epoch: 0 });
    expect(feeder.status().selected).toBe(expected.length);
  });

  it('a file written before pools knew articles holds out by article once reopened', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'feeder-')), 'feeder.sqlite');
    feederWith(200, {}, { path }).close();
    const db = new Database(path);
    // A file of that time had no index on the column either (issue 44 added it).
    db.exec('DROP INDEX items_by_article; ALTER TABLE items DROP COLUMN article_id');
    db.close();
    const feeder = openFeeder({}, { path });
    const items = poolItems(200);
    const copies = trainCopies(items, mix(1));
    expect(feeder.status().selected).toBe(items.reduce((n, it) => n + copies(it), 0));
  });

  it('ranks of one run get disjoint batches, each rank its own stride', () => {
    const feeder = feederWith(200);
    const seen = new Map<string, number>();
    for (let round = 0; round < 3; round++) {
      for (let rank = 0; rank < 4; rank++) {
        const l = leased(feeder.lease({ run: 'dp', rank, worldSize: 4 }));
        expect(l.batch.rank).toBe(rank);
        expect(l.batch.index % 4).toBe(rank);
        for (const item of l.batch.items) {
          const key = `${item.extra_info.qa_id}#${item.extra_info.copy}`;
          expect(seen.has(key), key).toBe(false);
          seen.set(key, rank);
        }
      }
    }
    expect(seen.size).toBe(12 * 8);
  });

  it('the order is deterministic for a seed and records the mix version', () => {
    const a = drainRank(feederWith(100), 'same', 0, 1);
    const b = drainRank(feederWith(100), 'same', 0, 1);
    expect(a).toEqual(b);
    const other = drainRank(feederWith(100), 'other-run', 0, 1);
    expect(other).not.toEqual(a);
    expect([...other].sort()).toEqual([...a].sort());
    const order = epochOrder(
      [
        { id: 'x', copies: 2 },
        { id: 'y', copies: 1 },
      ],
      epochSeed(7, 'r', 0),
    );
    expect(order).toHaveLength(3);
  });

  it('a lease that expires is delivered again, to the same rank, and the old lease cannot ack', () => {
    const c = clock();
    const feeder = feederWith(50, {}, { now: c.now });
    const first = leased(feeder.lease({ run: 'exp', rank: 0, worldSize: 2 }));
    c.advance(500);
    // Still held: the next lease is another batch.
    const second = leased(feeder.lease({ run: 'exp', rank: 0, worldSize: 2 }));
    expect(second.batch.id).not.toBe(first.batch.id);
    c.advance(501);
    const again = leased(feeder.lease({ run: 'exp', rank: 0, worldSize: 2 }));
    expect(again.batch.id).toBe(first.batch.id);
    expect(again.batch.attempt).toBe(2);
    expect(again.batch.items).toEqual(first.batch.items);
    expect(() => feeder.ack({ run: 'exp', batchId: first.batch.id, leaseId: first.leaseId })).toThrow(
      /never made, was released, or was replaced/,
    );
    // The second lease expired too (at +1500): acking it is refused, and nothing changes.
    c.advance(600);
    expect(() => feeder.ack({ run: 'exp', batchId: second.batch.id, leaseId: second.leaseId })).toThrow(
      /expired/,
    );
    feeder.ack({ run: 'exp', batchId: again.batch.id, leaseId: again.leaseId });
    expect(feeder.runStatus('exp').batches).toMatchObject({ acked: 1, redelivered: 1 });
  });

  it('extend keeps a lease alive past its deadline', () => {
    const c = clock();
    const feeder = feederWith(30, {}, { now: c.now });
    const l = leased(feeder.lease({ run: 'ext', rank: 0, worldSize: 1 }));
    c.advance(900);
    feeder.extend({ run: 'ext', batchId: l.batch.id, leaseId: l.leaseId, leaseMs: 5000 });
    c.advance(2000);
    const next = leased(feeder.lease({ run: 'ext', rank: 0, worldSize: 1 }));
    expect(next.batch.id).not.toBe(l.batch.id);
    expect(feeder.ack({ run: 'ext', batchId: l.batch.id, leaseId: l.leaseId }).acked).toBe(l.batch.id);
  });

  it('refuses bad input with a status and a reason, changing nothing', () => {
    const feeder = feederWith(30);
    const l = leased(feeder.lease({ run: 'bad', rank: 0, worldSize: 2 }));
    const before = JSON.stringify(feeder.runStatus('bad'));
    const refused = (fn: () => unknown, status: number, code: string) => {
      try {
        fn();
      } catch (e) {
        expect(e).toBeInstanceOf(FeederError);
        expect((e as FeederError).status).toBe(status);
        expect((e as FeederError).code).toBe(code);
        return;
      }
      throw new Error('not refused');
    };
    refused(() => feeder.ack({ run: 'nope', batchId: l.batch.id, leaseId: l.leaseId }), 404, 'unknown-run');
    refused(() => feeder.runStatus('nope'), 404, 'unknown-run');
    refused(() => feeder.ack({ run: 'bad', batchId: 'bad/e0/b99', leaseId: 'x' }), 404, 'unknown-batch');
    refused(() => feeder.ack({ run: 'bad', batchId: l.batch.id, leaseId: 'never' }), 409, 'not-leased');
    refused(() => feeder.lease({ run: 'bad', rank: 0, worldSize: 3 }), 409, 'run-mismatch');
    refused(
      () =>
        feeder.ack({
          run: 'bad',
          batchId: l.batch.id,
          leaseId: l.leaseId,
          rewards: [Number.NaN, ...Array(7).fill(0)],
        }),
      400,
      'bad-reward',
    );
    refused(
      () => feeder.ack({ run: 'bad', batchId: l.batch.id, leaseId: l.leaseId, rewards: [1] }),
      400,
      'bad-length',
    );
    expect(JSON.stringify(feeder.runStatus('bad'))).toBe(before);
    expect(feeder.pendingRewards().rows).toEqual([]);
    feeder.ack({ run: 'bad', batchId: l.batch.id, leaseId: l.leaseId, rewards: Array(8).fill(0.5) });
    refused(() => feeder.ack({ run: 'bad', batchId: l.batch.id, leaseId: l.leaseId }), 409, 'already-acked');
    expect(feeder.runStatus('bad').ackedItems).toBe(8);
  });

  it('answers 503 before any mix and waits when the mix selects nothing', () => {
    const feeder = Feeder.open(':memory:', { batchSize: 4 });
    feeder.addItems(poolItems(10));
    expect(() => feeder.lease({ run: 'r', rank: 0, worldSize: 1 })).toThrow(/no mix.state yet/);
    feeder.setMix(mix(1, { quotas: {} }));
    expect(feeder.lease({ run: 'r', rank: 0, worldSize: 1 })).toMatchObject({ status: 'wait' });
  });

  it('acked rewards wait in the file for ClickHouse, one row per item and step', () => {
    const feeder = feederWith(30);
    const l = leased(feeder.lease({ run: 'rw', rank: 0, worldSize: 1 }));
    const rewards = l.batch.items.map((_, i) => (i % 2 ? 1 : null));
    feeder.ack({ run: 'rw', batchId: l.batch.id, leaseId: l.leaseId, rewards, step: 3 });
    const pending = feeder.pendingRewards();
    expect(pending.rows).toHaveLength(4);
    expect(pending.rows.every((r) => r.step === 3 && r.reward === 1 && r.mixVersion === 1)).toBe(true);
    feeder.dropRewardsThrough(pending.through);
    expect(feeder.pendingRewards().rows).toEqual([]);
  });

  it('leaves QA withdrawn by the dedup out of the pool, whether the withdrawal came before or after them', async () => {
    const items = poolItems(200);
    const late = poolItems(3, 'late');
    const feeder = feederWith(200);
    const gone = [items[0]!.id, items[1]!.id, late[0]!.id];
    feeder.withdrawItems(gone);
    feeder.withdrawItems([items[0]!.id]);
    feeder.addItems(late);
    await feeder.selectionMade();
    expect(feeder.status().pool).toBe(200 + 3 - gone.length);
    const got = new Set(drainRank(feeder, 'withdrawn', 0, 1));
    for (const id of gone) expect(got.has(id), id).toBe(false);
    const all = [...items, ...late];
    const copies = trainCopies(all, mix(1));
    const expected = all.filter((it) => copies(it) > 0 && !gone.includes(it.id));
    // The mix would select some of them: what keeps them out is their withdrawal.
    expect(all.filter((it) => gone.includes(it.id) && copies(it) > 0).length).toBeGreaterThan(0);
    expect(got).toEqual(new Set(expected.map((it) => it.id)));
  });

  it('answers leases from the selection before while a new mix version is selected in slices', async () => {
    // A clock that stands still: on a loaded machine the selection outlasts a lease of a second,
    // and an expired batch of version 1 would be delivered again after the new selection.
    const feeder = feederWith(20_000, {}, { now: clock().now });
    expect(leased(feeder.lease({ run: 'sl', rank: 0, worldSize: 1 })).batch.mixVersion).toBe(1);
    feeder.setMix(mix(2));
    // The new selection is made by the background work, a slice per turn of the event loop.
    expect(leased(feeder.lease({ run: 'sl', rank: 0, worldSize: 1 })).batch.mixVersion).toBe(1);
    let turns = 0;
    const made = feeder.selectionMade().then(() => turns);
    while ((await Promise.race([made, null])) === null) {
      expect(leased(feeder.lease({ run: 'sl', rank: 0, worldSize: 1 })).batch.mixVersion).toBe(1);
      turns++;
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(turns).toBeGreaterThan(1);
    // Once made, the run re-plans for it: after the batches cut ahead under version 1.
    const versions: number[] = [];
    for (let k = 0; k <= FeederConfig.parse({}).readyBatches + 1; k++)
      versions.push(leased(feeder.lease({ run: 'sl', rank: 0, worldSize: 1 })).batch.mixVersion);
    expect(versions.at(-1)).toBe(2);
  });

  it('finishes selecting a large pool for a new mix version while items keep arriving every turn', async () => {
    const feeder = feederWith(20_000);
    expect(leased(feeder.lease({ run: 'busy', rank: 0, worldSize: 1 })).batch.mixVersion).toBe(1);
    feeder.setMix(mix(2));
    let version = 1;
    for (let turn = 0; turn < 2000 && version === 1; turn++) {
      // New items each turn, as a busy pipeline's steps bring them: a selection under way goes on.
      feeder.addItems(poolItems(2, `late-${turn}`));
      await new Promise((resolve) => setImmediate(resolve));
      const l = leased(feeder.lease({ run: 'busy', rank: 0, worldSize: 1 }));
      feeder.ack({ run: 'busy', batchId: l.batch.id, leaseId: l.leaseId });
      version = l.batch.mixVersion;
    }
    expect(version).toBe(2);
  });

  it('follows a new mix version mid-epoch: the rest of the epoch is the new selection, less what was cut', async () => {
    const feeder = feederWith(100);
    const first = leased(feeder.lease({ run: 'mv', rank: 0, worldSize: 1 }));
    expect(first.batch.mixVersion).toBe(1);
    const before = first.batch.items.map((i) => i.extra_info.qa_id);
    feeder.ack({ run: 'mv', batchId: first.batch.id, leaseId: first.leaseId });
    // Version 2 drops Ecology.
    const v2 = mix(2, {
      quotas: { Genetics: mix(1).quotas.Genetics, Microbiology: mix(1).quotas.Microbiology },
    });
    feeder.setMix(v2);
    await feeder.selectionMade();
    // Batches cut ahead under version 1 (the background work's) come first, then version 2's.
    const rest: string[] = [];
    const restOfV2: string[] = [];
    for (let r = feeder.lease({ run: 'mv', rank: 0, worldSize: 1 }); r.status !== 'epoch-end'; ) {
      const l = leased(r);
      const ids = l.batch.items.map((i) => i.extra_info.qa_id);
      rest.push(...ids);
      if (l.batch.mixVersion === 2) restOfV2.push(...ids);
      feeder.ack({ run: 'mv', batchId: l.batch.id, leaseId: l.leaseId });
      r = feeder.lease({ run: 'mv', rank: 0, worldSize: 1 });
    }
    expect(restOfV2.length).toBeGreaterThan(0);
    const batch = leased(feeder.lease({ run: 'mv', rank: 0, worldSize: 1 }));
    expect(batch.batch.epoch).toBe(1);
    const all = [...before, ...rest];
    const items = poolItems(100);
    const [v1Copies, v2Copies] = [trainCopies(items, mix(1)), trainCopies(items, v2)];
    for (const id of restOfV2) expect(v2Copies(items.find((i) => i.id === id)!)).toBeGreaterThan(0);
    // Nothing of version 2's selection is missing or given more copies than it holds.
    for (const it of items) {
      const n = all.filter((id) => id === it.id).length;
      expect(n, it.id).toBeGreaterThanOrEqual(v2Copies(it));
      expect(n, it.id).toBeLessThanOrEqual(Math.max(v2Copies(it), v1Copies(it)));
    }
  });

  it('a restart loses no lease, ack or epoch position', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'feeder-')), 'feeder.sqlite');
    const c = clock();
    const a = feederWith(200, {}, { path, now: c.now });
    const acked = leased(a.lease({ run: 'rs', rank: 0, worldSize: 2 }));
    a.ack({
      run: 'rs',
      batchId: acked.batch.id,
      leaseId: acked.leaseId,
      rewards: acked.batch.items.map(() => 1),
    });
    const held = leased(a.lease({ run: 'rs', rank: 0, worldSize: 2 }));
    const other = leased(a.lease({ run: 'rs', rank: 1, worldSize: 2 }));
    const status = a.runStatus('rs');
    a.close();
    const b = openFeeder({}, { path, now: c.now });
    expect(b.runStatus('rs')).toEqual(status);
    expect(b.mixVersion).toBe(1);
    expect(b.pendingRewards().rows).toHaveLength(
      new Set(acked.batch.items.map((i) => i.extra_info.qa_id)).size,
    );
    // The held lease is still held (not leased again) and can be acked after the restart.
    const next = leased(b.lease({ run: 'rs', rank: 0, worldSize: 2 }));
    expect([acked.batch.id, held.batch.id, other.batch.id]).not.toContain(next.batch.id);
    b.ack({ run: 'rs', batchId: held.batch.id, leaseId: held.leaseId });
    expect(() => b.ack({ run: 'rs', batchId: acked.batch.id, leaseId: acked.leaseId })).toThrow(
      /already acked/,
    );
    b.ack({ run: 'rs', batchId: next.batch.id, leaseId: next.leaseId });
    b.ack({ run: 'rs', batchId: other.batch.id, leaseId: other.leaseId });
    // The rest of the epoch comes after, in the same order as without the restart.
    const fresh = feederWith(200, {}, { now: c.now });
    const ids = (f: Feeder) => {
      const out: string[] = [];
      for (const r of [0, 1]) out.push(...drainRank(f, 'rs', r, 2));
      return out;
    };
    const rest = ids(b);
    const whole = ids(fresh);
    const before = [acked, held, other, next].flatMap((l) => l.batch.items.map((i) => i.extra_info.qa_id));
    expect([...before, ...rest].sort()).toEqual([...whole].sort());
    expect(RolloutBatch.parse(next.batch).items).toHaveLength(8);
  });
});
