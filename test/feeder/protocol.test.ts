import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { Feeder } from '../../processors/feeder/feeder.js';
import { FeederError } from '../../processors/feeder/feeder-error.js';
import { rolloutRow } from '../../processors/feeder/row.js';
import { FeederConfig, type LeaseRequest, type LeaseResponse } from '../../schemas/feeder.js';
import { poolItems } from './fixtures.js';
import { clock, feederWith, leased } from './setup.js';

// The protocol as trainers fetch (issue 20): prefetch across an epoch's end, release, per-slot
// acks with raw rewards, a batch size that changes between epochs, per-epoch counts, and bad
// input refused with a reason and no change.

function setup(opts: { items?: number; batchSize?: number; prefetchBatches?: number } = {}) {
  const c = clock();
  const path = join(mkdtempSync(join(tmpdir(), 'feeder-protocol-')), 'feeder.sqlite');
  const { items = 40, ...config } = opts;
  const feeder = feederWith(items, config, { path, now: c.now });
  return { feeder, path, advance: c.advance };
}

const slotKeys = (l: Extract<LeaseResponse, { status: 'leased' }>) =>
  l.batch.items.map((i) => `${i.extra_info.qa_id}#${i.extra_info.copy}`);

/** Leases every fresh batch of the rank's epoch, acking none; returns them. */
function leaseToEpochEnd(feeder: Feeder, req: LeaseRequest) {
  const out: Extract<LeaseResponse, { status: 'leased' }>[] = [];
  for (;;) {
    const r = feeder.lease(req);
    if (r.status === 'epoch-end') return out;
    out.push(leased(r));
  }
}

describe('feeder protocol', () => {
  it('a rank leases the next epoch while it holds batches of the one before, up to its prefetch bound', () => {
    const { feeder } = setup({ prefetchBatches: 2 });
    const req = { run: 'pf', rank: 0, worldSize: 1 };
    const epoch0 = leaseToEpochEnd(feeder, req);
    expect(epoch0.length).toBeGreaterThan(3);
    // All of epoch 0 is held: three or more batches are over the bound of 2.
    const refused = feeder.lease(req);
    expect(refused).toMatchObject({ status: 'wait', epoch: 1 });
    if (refused.status === 'wait')
      expect(refused.reason).toMatch(/holds \d+ unacked batch\(es\) of epochs before 1 \(prefetch 2\)/);
    for (const l of epoch0.slice(0, -2)) feeder.ack({ run: 'pf', batchId: l.batch.id, leaseId: l.leaseId });
    // Two held: the loader's look-ahead goes on into epoch 1.
    const first1 = leased(feeder.lease(req));
    expect(first1.batch.epoch).toBe(1);
    // A lease may ask a tighter bound.
    expect(feeder.lease({ ...req, prefetch: 1 })).toMatchObject({ status: 'wait' });
    // The held batches of epoch 0 are acked late, and counted in their epoch.
    for (const l of epoch0.slice(-2)) feeder.ack({ run: 'pf', batchId: l.batch.id, leaseId: l.leaseId });
    const status = feeder.runStatus('pf');
    expect(status.epochs[0]).toMatchObject({ epoch: 0, acked: status.epochs[0]!.planned, redelivered: 0 });
    expect(status.epochs[1]).toMatchObject({ epoch: 1, acked: 0 });
  });

  it('a held batch of an earlier epoch that expires comes back before the new epoch goes on', () => {
    const { feeder, advance } = setup();
    const req = { run: 'late', rank: 0, worldSize: 1 };
    const epoch0 = leaseToEpochEnd(feeder, req);
    for (const l of epoch0.slice(0, -1)) feeder.ack({ run: 'late', batchId: l.batch.id, leaseId: l.leaseId });
    const held = epoch0.at(-1)!;
    const next = leased(feeder.lease(req));
    expect(next.batch.epoch).toBe(1);
    advance(1001);
    const again = leased(feeder.lease(req));
    expect(again.batch).toMatchObject({ id: held.batch.id, epoch: 0, attempt: 2 });
    expect(slotKeys(again)).toEqual(slotKeys(held));
    expect(feeder.runStatus('late').epochs[0]!.redelivered).toBe(held.batch.items.length);
  });

  it('release gives a batch back untrained: the next lease gets it first, the released lease is void', () => {
    const { feeder } = setup();
    const req = { run: 'rel', rank: 0, worldSize: 1 };
    const a = leased(feeder.lease(req));
    const b = leased(feeder.lease(req));
    expect(feeder.release({ run: 'rel', batchId: b.batch.id, leaseId: b.leaseId, rank: 0 })).toEqual({
      released: b.batch.id,
      items: 8,
    });
    const again = leased(feeder.lease(req));
    expect(again.batch).toMatchObject({ id: b.batch.id, attempt: 2 });
    expect(again.slots).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(slotKeys(again)).toEqual(slotKeys(b));
    expect(() => feeder.ack({ run: 'rel', batchId: b.batch.id, leaseId: b.leaseId })).toThrow(/was released/);
    feeder.ack({ run: 'rel', batchId: again.batch.id, leaseId: again.leaseId });
    feeder.ack({ run: 'rel', batchId: a.batch.id, leaseId: a.leaseId });
    expect(feeder.runStatus('rel').epochs[0]).toMatchObject({ acked: 16, redelivered: 8 });
  });

  it('acks a subset of slots with raw rewards; the rest stays leased and only it is delivered again', () => {
    const { feeder, advance } = setup();
    const l = leased(feeder.lease({ run: 'slots', rank: 0, worldSize: 1 }));
    expect(l.slots).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    const ref = { run: 'slots', batchId: l.batch.id, leaseId: l.leaseId };
    expect(feeder.ack({ ...ref, slots: [2, 0], rewards: [3.5, -7], step: 4 })).toEqual({
      acked: l.batch.id,
      items: 2,
      rewards: 2,
      remaining: 6,
    });
    // Rewards are stored raw (no [-1, 1] range any more).
    const rows = feeder.pendingRewards().rows;
    const idOf = (slot: number) => l.batch.items[slot]!.extra_info.qa_id;
    expect(rows.find((r) => r.qaId === idOf(2))?.reward).toBe(3.5);
    expect(rows.find((r) => r.qaId === idOf(0))?.reward).toBe(-7);
    expect(feeder.ack({ ...ref, slots: [5] })).toMatchObject({ items: 1, rewards: 0, remaining: 5 });
    advance(1001);
    const again = leased(feeder.lease({ run: 'slots', rank: 0, worldSize: 1 }));
    expect(again.slots).toEqual([1, 3, 4, 6, 7]);
    expect(slotKeys(again)).toEqual([1, 3, 4, 6, 7].map((s) => slotKeys(l)[s]));
    // Without slots: every slot not yet acked, rewards in slot order.
    expect(
      feeder.ack({
        run: 'slots',
        batchId: l.batch.id,
        leaseId: again.leaseId,
        rewards: [1, 1e6, 0, null, 2],
      }),
    ).toEqual({ acked: l.batch.id, items: 5, rewards: 4, remaining: 0 });
    expect(feeder.runStatus('slots').epochs[0]).toMatchObject({ acked: 8, rewarded: 6, redelivered: 5 });
    expect(feeder.runStatus('slots').batches).toMatchObject({ acked: 1, leased: 0 });
  });

  it("a run's batch size changes at the next epoch it plans", () => {
    const { feeder } = setup({ items: 20 });
    const req = { run: 'size', rank: 0, worldSize: 1 };
    const first = leased(feeder.lease(req));
    feeder.ack({ run: 'size', batchId: first.batch.id, leaseId: first.leaseId });
    // Asked mid-epoch: epoch 0 keeps its size.
    const sizes0 = [first.batch.items.length];
    for (;;) {
      const r = feeder.lease({ ...req, batchSize: 3 });
      if (r.status === 'epoch-end') break;
      const l = leased(r);
      sizes0.push(l.batch.items.length);
      feeder.ack({ run: 'size', batchId: l.batch.id, leaseId: l.leaseId });
    }
    expect(sizes0.slice(0, -1).every((n) => n === 8)).toBe(true);
    const next = leased(feeder.lease({ ...req, batchSize: 3 }));
    expect(next.batch).toMatchObject({ epoch: 1 });
    expect(next.batch.items).toHaveLength(3);
    const status = feeder.runStatus('size');
    expect(status.batchSize).toBe(3);
    expect(status.epochs.map((e) => [e.epoch, e.batchSize])).toEqual([
      [0, 8],
      [1, 3],
    ]);
    expect(status.epochs[0]!.acked).toBe(status.epochs[0]!.planned);
  });

  it('plans the next epoch off the request path, in the order a lease would plan it', async () => {
    // The plan ahead is private: read here to check that it was made, and made before epoch 1.
    const ahead = (f: Feeder) =>
      (
        f as unknown as { epochs: { ahead: Map<string, { epoch: number; steps: unknown }> } }
      ).epochs.ahead.get('ahead');
    const order = async (background: boolean) => {
      const { feeder } = setup({ items: 200 });
      const req = { run: 'ahead', rank: 0, worldSize: 1 };
      const ids: string[] = [];
      for (let ends = 0; ends < 2; ) {
        const r = feeder.lease(req);
        if (r.status === 'epoch-end') {
          ends++;
          // Epoch 0 is leased to its end: epoch 1 is planned, in the background only.
          if (ends === 1) expect(ahead(feeder)).toMatchObject(background ? { epoch: 1, steps: null } : {});
          if (ends === 1 && !background) expect(ahead(feeder)).toBeUndefined();
          continue;
        }
        const l = leased(r);
        ids.push(...slotKeys(l));
        feeder.ack({ run: 'ahead', batchId: l.batch.id, leaseId: l.leaseId });
        // The work a lease leaves runs after it (setImmediate), in slices, until none is left.
        if (background)
          do await new Promise((resolve) => setImmediate(resolve));
          while (ahead(feeder)?.steps);
      }
      feeder.close();
      return ids;
    };
    const inBackground = await order(true);
    expect(inBackground).toEqual(await order(false));
    // Two epochs of the same items, in two orders.
    const half = inBackground.length / 2;
    expect([...inBackground.slice(0, half)].sort()).toEqual([...inBackground.slice(half)].sort());
    expect(inBackground.slice(0, half)).not.toEqual(inBackground.slice(half));
  });

  it('serves each row as rolloutRow renders it, also from a file opened with other templates', () => {
    const { feeder, path } = setup();
    const byId = new Map(poolItems(40).map((i) => [i.id, i]));
    const expectRows = (f: Feeder, config: FeederConfig, run: string) => {
      const l = leased(f.lease({ run, rank: 0, worldSize: 1 }));
      // Copies and positions differ per slot: the stored row's placeholders are filled per slot.
      for (const item of l.batch.items) {
        const { index, copy, qa_id } = item.extra_info;
        expect(item).toEqual(rolloutRow(byId.get(qa_id)!, config, { index, split: 'train', copy }));
      }
      return l.batch.items;
    };
    const items = expectRows(feeder, feeder.config, 'rows');
    expect(new Set(items.map((i) => i.extra_info.index)).size).toBe(items.length);
    feeder.close();
    const other = FeederConfig.parse({ batchSize: 8, templates: { system: 'Be brief.' } });
    const reopened = Feeder.open(path, other);
    expect(expectRows(reopened, other, 'rows-2')[0]!.prompt[0]).toEqual({
      role: 'system',
      content: 'Be brief.',
    });
    reopened.close();
  });

  it('refuses bad input with a reason code and leaves the file exactly as it was', () => {
    const { feeder, path, advance } = setup();
    const reader = new Database(path, { readonly: true });
    const digest = () => {
      const h = createHash('sha256');
      for (const { name } of reader
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .all() as { name: string }[])
        h.update(name).update(JSON.stringify(reader.prepare(`SELECT * FROM "${name}"`).raw().all()));
      return h.digest('hex');
    };
    const r0 = leased(feeder.lease({ run: 'bad', rank: 0, worldSize: 2 }));
    const r1 = leased(feeder.lease({ run: 'bad', rank: 1, worldSize: 2 }));
    const expired = leased(feeder.lease({ run: 'bad', rank: 0, worldSize: 2 }));
    const ref = { run: 'bad', batchId: r0.batch.id, leaseId: r0.leaseId };
    feeder.ack({ ...ref, slots: [1], rewards: [0.5] });
    advance(900);
    feeder.extend({ ...ref, leaseMs: 5000 });
    feeder.extend({ run: 'bad', batchId: r1.batch.id, leaseId: r1.leaseId, leaseMs: 5000 });
    advance(200);
    const before = digest();
    const pending = feeder.pendingRewards().rows.length;
    const cases: [string, () => unknown, number, string, RegExp][] = [
      [
        'ack, expired lease',
        () => feeder.ack({ run: 'bad', batchId: expired.batch.id, leaseId: expired.leaseId }),
        409,
        'lease-expired',
        /expired at/,
      ],
      [
        'release, expired lease',
        () => feeder.release({ run: 'bad', batchId: expired.batch.id, leaseId: expired.leaseId }),
        409,
        'lease-expired',
        /expired/,
      ],
      [
        'extend, expired lease',
        () => feeder.extend({ run: 'bad', batchId: expired.batch.id, leaseId: expired.leaseId }),
        409,
        'lease-expired',
        /expired/,
      ],
      [
        'ack, lease never made',
        () => feeder.ack({ ...ref, leaseId: 'never' }),
        409,
        'not-leased',
        /never made/,
      ],
      [
        'release, lease never made',
        () => feeder.release({ ...ref, leaseId: 'never' }),
        409,
        'not-leased',
        /never made/,
      ],
      [
        'extend, lease never made',
        () => feeder.extend({ ...ref, leaseId: 'never' }),
        409,
        'not-leased',
        /never made/,
      ],
      [
        'ack, batch never made',
        () => feeder.ack({ ...ref, batchId: 'bad/e0/b999' }),
        404,
        'unknown-batch',
        /no batch/,
      ],
      [
        'release, run never made',
        () => feeder.release({ ...ref, run: 'ghost' }),
        404,
        'unknown-run',
        /no run "ghost"/,
      ],
      [
        'ack, other rank',
        () => feeder.ack({ ...ref, rank: 1 }),
        409,
        'other-rank',
        /belongs to rank 0, not rank 1/,
      ],
      [
        'release, other rank',
        () => feeder.release({ run: 'bad', batchId: r1.batch.id, leaseId: r1.leaseId, rank: 0 }),
        409,
        'other-rank',
        /rank 1/,
      ],
      ['extend, other rank', () => feeder.extend({ ...ref, rank: 1 }), 409, 'other-rank', /rank 0/],
      [
        'reward NaN',
        () => feeder.ack({ ...ref, slots: [0], rewards: [Number.NaN] }),
        400,
        'bad-reward',
        /finite/,
      ],
      [
        'reward Infinity',
        () => feeder.ack({ ...ref, slots: [0, 2], rewards: [1, Number.NEGATIVE_INFINITY] }),
        400,
        'bad-reward',
        /rewards\[1\]/,
      ],
      [
        'slot past the batch',
        () => feeder.ack({ ...ref, slots: [8] }),
        400,
        'bad-slot',
        /slots\[0\] = 8 is outside .* \(slots 0\.\.7\)/,
      ],
      ['negative slot', () => feeder.ack({ ...ref, slots: [0, -1] }), 400, 'bad-slot', /slots\[1\] = -1/],
      ['fractional slot', () => feeder.ack({ ...ref, slots: [1.5] }), 400, 'bad-slot', /1\.5/],
      ['slot listed twice', () => feeder.ack({ ...ref, slots: [3, 3] }), 400, 'bad-slot', /listed twice/],
      [
        'second ack of a slot',
        () => feeder.ack({ ...ref, slots: [0, 1], rewards: [1, 1] }),
        409,
        'slot-already-acked',
        /slot\(s\) 1 of batch/,
      ],
      [
        'rewards not one per slot',
        () => feeder.ack({ ...ref, slots: [0, 2], rewards: [1] }),
        400,
        'bad-length',
        /1 entries; the ack covers 2/,
      ],
      [
        'rewards not one per remaining slot',
        () => feeder.ack({ ...ref, rewards: Array(8).fill(0) }),
        400,
        'bad-length',
        /covers 7/,
      ],
    ];
    for (const [what, fn, status, code, reason] of cases) {
      let error: unknown;
      try {
        fn();
      } catch (e) {
        error = e;
      }
      expect(error, what).toBeInstanceOf(FeederError);
      expect([(error as FeederError).status, (error as FeederError).code], what).toEqual([status, code]);
      expect((error as FeederError).message, what).toMatch(reason);
      expect(digest(), what).toBe(before);
    }
    expect(feeder.pendingRewards().rows).toHaveLength(pending);
    // The refused requests left the leases usable.
    expect(feeder.ack({ ...ref, rewards: Array(7).fill(1) })).toMatchObject({ items: 7, remaining: 0 });
    expect(() => feeder.ack(ref)).toThrow(/already acked/);
    reader.close();
    feeder.close();
  });
});
