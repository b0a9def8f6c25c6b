import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  choose,
  emptyRow,
  type ItemView,
  isIssue,
  type Observation,
  observe,
  passRate,
  prior,
  updated,
} from '../../processors/feeder/difficulty.js';
import type { Feeder } from '../../processors/feeder/feeder.js';
import { FeederError } from '../../processors/feeder/feeder-error.js';
import { Config, formatIssues } from '../../schemas/config.js';
import { type FeederConfigInput, Rollouts } from '../../schemas/feeder.js';
import { poolItems } from './fixtures.js';
import { feederWith, type Leased, leased, openFeeder } from './setup.js';

/** A band that keeps the plan's topic shares exactly (no topic budget). */
const BAND = { floor: 0.1, ceiling: 0.9, minRollouts: 5, cooldownSteps: 10, exploreShare: 0, topicBudget: 0 };

/** A feeder with this difficulty config, leases of a minute (acks come at once, on the real clock). */
const bandFeeder = (n: number, difficulty: FeederConfigInput['difficulty'] = {}, path?: string) =>
  feederWith(n, { leaseMs: 60_000, difficulty }, path ? { path } : {});

const ids = (r: Leased) => r.batch.items.map((i) => i.extra_info.qa_id);

/** The run's next batch on rank 0 of 1, into the next epoch when this one has ended. */
function next(feeder: Feeder, run: string) {
  const r = feeder.lease({ run, rank: 0, worldSize: 1 });
  return leased(r.status === 'epoch-end' ? feeder.lease({ run, rank: 0, worldSize: 1 }) : r);
}

describe('observe: what one acked slot says', () => {
  it.each([
    ['rollouts', { count: 3, rewards: [1, 0, 1] }, null, { count: 3, passes: 2, rewardSum: 2, flat: false }],
    [
      'a flat group',
      { count: 4, rewards: [1, 1, 1, 1] },
      null,
      { count: 4, passes: 4, rewardSum: 4, flat: true },
    ],
    ['mean and count', { count: 5, mean: 0.4 }, 0.4, { count: 5, passes: 2, rewardSum: 2, flat: false }],
    ['an all-fail mean', { count: 5, mean: 0 }, null, { count: 5, passes: 0, rewardSum: 0, flat: true }],
    ['a mean reward only (one rollout)', null, 0.7, { count: 1, passes: 0.7, rewardSum: 0.7, flat: false }],
    [
      'rewards outside [0, 1] pass clamped',
      { count: 2, rewards: [2, -1] },
      null,
      { count: 2, passes: 1, rewardSum: 1, flat: false },
    ],
  ] as const)('%s', (_name, rollouts, reward, expected) => {
    const o = observe(rollouts as Rollouts | null, reward, 'rollouts[0]') as Observation;
    expect(o.count).toBe(expected.count);
    expect(o.passes).toBeCloseTo(expected.passes, 12);
    expect(o.rewardSum).toBeCloseTo(expected.rewardSum, 12);
    expect(o.flat).toBe(expected.flat);
  });

  it.each([
    ['a count other than its rewards', { count: 3, rewards: [1, 0] }, null, 'rollout-count-mismatch'],
    ['a NaN reward', { count: 2, rewards: [1, Number.NaN] }, null, 'bad-rollout-reward'],
    ['an infinite mean', { count: 2, mean: Number.POSITIVE_INFINITY }, null, 'bad-rollout-reward'],
    ['neither rewards nor mean', { count: 2 }, null, 'bad-rollout'],
    ['a mean not that of its rewards', { count: 2, rewards: [1, 0], mean: 0.9 }, null, 'reward-mismatch'],
    ["a slot reward not its rollouts' mean", { count: 2, rewards: [1, 1] }, 0.5, 'reward-mismatch'],
  ] as const)('refuses %s', (_name, rollouts, reward, code) => {
    const o = observe(rollouts as Rollouts, reward, 'rollouts[0]');
    expect(isIssue(o) && o.code).toBe(code);
  });
});

const obsArb = fc
  .record({
    count: fc.integer({ min: 1, max: 16 }),
    p: fc.double({ min: -2, max: 3, noNaN: true }),
    step: fc.integer({ min: 0, max: 500 }),
  })
  .map(({ count, p, step }) => ({ step, obs: observe({ count, mean: p }, null, 'x') as Observation }));

describe('the weighted pass rate', () => {
  it('stays in [0, 1] whatever the rewards and steps', () => {
    fc.assert(
      fc.property(
        fc.array(obsArb, { minLength: 1, maxLength: 30 }),
        fc.double({ min: 1, max: 200, noNaN: true }),
        (xs, h) => {
          let row = emptyRow('r', 'i');
          for (const { obs, step } of xs) {
            row = updated(row, obs, step, h);
            const rate = passRate(row)!;
            expect(rate).toBeGreaterThanOrEqual(0);
            expect(rate).toBeLessThanOrEqual(1);
          }
        },
      ),
    );
  });

  it('is the same whatever order the acks arrive in (ranks ack out of step order)', () => {
    fc.assert(
      fc.property(fc.array(obsArb, { minLength: 1, maxLength: 20 }), fc.integer(), (xs, seed) => {
        const shuffled = [...xs].sort((a, b) => ((a.step * 31 + seed) % 7) - ((b.step * 31 + seed) % 7));
        const run = (list: typeof xs) =>
          list.reduce((row, { obs, step }) => updated(row, obs, step, 50), emptyRow('r', 'i'));
        expect(passRate(run(shuffled))!).toBeCloseTo(passRate(run(xs))!, 9);
      }),
    );
  });

  it('follows a policy that improves: recent steps weigh more than the plain mean', () => {
    let row = emptyRow('r', 'i');
    for (let step = 0; step < 100; step++)
      row = updated(row, observe({ count: 5, mean: 0 }, null, 'x') as Observation, step, 10);
    for (let step = 100; step < 130; step++)
      row = updated(row, observe({ count: 5, mean: 1 }, null, 'x') as Observation, step, 10);
    expect(row.passes / row.rollouts).toBeCloseTo(30 / 130, 9);
    expect(passRate(row)!).toBeGreaterThan(0.85);
  });
});

describe('the prior of an unseen item', () => {
  it("is a half with no acks, and moves to its topic's, then its grade's and article's rates", () => {
    const groups = new Map<string, { passes: number; rollouts: number }>();
    const meta = { topics: ['Genetics'], articleId: 'a1', grade: 0.5 };
    expect(prior((k) => groups.get(k), meta)).toBe(0.5);
    groups.set('t\u0000Genetics', { passes: 90, rollouts: 100 });
    const topic = prior((k) => groups.get(k), meta);
    expect(topic).toBeCloseTo(91 / 102, 9);
    groups.set('a\u0000a1', { passes: 0, rollouts: 40 });
    expect(prior((k) => groups.get(k), meta)).toBeLessThan(topic / 4);
  });
});

/** Items of topics t0..t3, ten of each; views from a random state. */
const stateArb = fc.record({
  planned: fc.array(fc.integer({ min: 0, max: 39 }), { minLength: 1, maxLength: 16 }),
  rates: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 40, maxLength: 40 }),
  aside: fc.array(fc.constantFrom<ItemView['aside']>(null, null, 'below-floor', 'above-ceiling'), {
    minLength: 40,
    maxLength: 40,
  }),
  seen: fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
  target: fc.option(fc.double({ min: 0, max: 1, noNaN: true })),
  explore: fc.constantFrom(0, 0.25),
});
const topicOf = (id: string) => `t${Number(id.slice(1)) % 4}`;
const peersOf = (id: string) =>
  Array.from({ length: 40 }, (_, k) => `i${k}`).filter((p) => topicOf(p) === topicOf(id));
/** choose's topic inputs for single-topic items: `topic` gives an item's, `peers` its topic's items. */
const oneTopicEach = (topic: (id: string) => string, peers: (id: string) => readonly string[]) => ({
  sampledTopic: (slot: { id: string }) => topic(slot.id),
  itemsOf: (t: string) => {
    const first = [...'abcd', ...Array.from({ length: 40 }, (_, k) => `i${k}`)].find((id) => topic(id) === t);
    return first === undefined ? [] : peers(first);
  },
  topicsOf: (id: string) => [topic(id)],
  shares: { planned: new Map<string, number>(), served: new Map<string, number>() },
});

describe('choose: what a batch serves of its plan', () => {
  it("keeps the plan's topic counts, and serves nothing set aside while a same-topic item is live", () => {
    fc.assert(
      fc.property(stateArb, (s) => {
        const view = (id: string): ItemView => {
          const k = Number(id.slice(1));
          return { rollouts: s.seen[k] ? 5 : 0, rate: s.rates[k]!, aside: s.aside[k]! };
        };
        const planned = s.planned.map((k) => ({ id: `i${k}`, copy: 0 }));
        const { slots, leftOut } = choose({
          batchId: 'b',
          planned,
          band: { ...BAND, exploreShare: s.explore },
          target: s.target,
          targetProbe: 4,
          view,
          ...oneTopicEach(topicOf, peersOf),
        });
        const count = (xs: { id: string }[]) => {
          const m = new Map<string, number>();
          for (const x of xs) m.set(topicOf(x.id), (m.get(topicOf(x.id)) ?? 0) + 1);
          return Object.fromEntries([...m].sort());
        };
        expect(count(slots)).toEqual(count(planned));
        for (const [i, slot] of slots.entries()) {
          if (view(slot.id).aside === null) continue;
          // Served while set aside: only the planned item, and only with no live peer left unused.
          expect(slot.id).toBe(planned[i]!.id);
          const used = new Set(slots.map((x) => x.id));
          expect(peersOf(slot.id).filter((p) => view(p).aside === null && !used.has(p))).toEqual([]);
        }
        for (const l of leftOut) expect(topicOf(l.by)).toBe(topicOf(l.id));
      }),
    );
  });
});

/** Leases and acks one batch of `run`, every slot with 5 rollouts of reward `reward(id)`. */
function step(feeder: Feeder, run: string, reward: (id: string) => number, at: number): string[] {
  const l = next(feeder, run);
  const served = ids(l);
  feeder.ack({
    run,
    batchId: l.batch.id,
    leaseId: l.leaseId,
    step: at,
    rollouts: served.map((id) => ({ count: 5, rewards: Array(5).fill(reward(id)) })),
  });
  return served;
}

describe('band-pass in the feeder', () => {
  it('counts the set-aside items it serves for lack of a live item of their topics', () => {
    const feeder = bandFeeder(40, { bandPass: null, runs: { bp: BAND } });
    // Every item always solved: once all of a topic are aside, only they are left to serve.
    for (let s = 1; s <= 12; s++) {
      step(feeder, 'bp', () => 1, s);
      step(feeder, 'plain', () => 1, s);
    }
    const served = feeder.runStatus('bp').difficulty.servedAside;
    expect(served).toBeGreaterThan(0);
    // What /metrics reads (bioalchemy_feeder_set_aside_served_total).
    expect(feeder.difficultyTotals().find((t) => t.run === 'bp')?.servedAside).toBe(served);
    expect(feeder.runStatus('plain').difficulty).toMatchObject({ setAside: 0, servedAside: 0 });
    feeder.close();
  });

  it('sets aside an item every rollout solves, serves none of it until its cool-down ends, then re-tests it', () => {
    const feeder = bandFeeder(400, { bandPass: BAND });
    const first = step(feeder, 'bp', () => 1, 1);
    const solved = new Set(first);
    const rec = feeder.itemDifficulty('bp', first[0]!);
    expect(rec).toMatchObject({
      rollouts: 5,
      passRate: 1,
      aside: true,
      asideUntil: 11,
      setAside: 1,
      flatGroups: 1,
    });
    // The batches cut before the ack (readyBatches ahead) may hold them; every one cut after may not.
    const served: string[][] = [];
    for (let s = 2; s < 11; s++)
      served.push(step(feeder, 'bp', (id) => (Number(id.slice(3)) % 2 ? 1 : 0.6), s));
    const afterCut = served.slice(3).flat();
    expect(afterCut.filter((id) => solved.has(id))).toEqual([]);
    // The lease says which planned items it left out, why, and what of the same topics stood in.
    const topics = new Map(poolItems(400).map((it) => [it.id, JSON.stringify(it.topics)]));
    // Odd items are always solved, even ones are in the band: once the plan comes round to items
    // observed before, a lease leaves odd ones out for even ones of the same topics, and says so.
    const parity = (id: string) => (Number(id.slice(3)) % 2 ? 1 : 0.6);
    let withLeftOut: NonNullable<Leased['leftOut']> = [];
    const retested = new Set<string>();
    for (let s = 11; s < 150; s++) {
      const l = next(feeder, 'bp');
      if (withLeftOut.length === 0) withLeftOut = l.leftOut ?? [];
      for (const id of ids(l)) if (solved.has(id)) retested.add(id);
      feeder.ack({
        run: 'bp',
        batchId: l.batch.id,
        leaseId: l.leaseId,
        step: s,
        rollouts: ids(l).map((id) => ({ count: 5, rewards: Array(5).fill(parity(id)) })),
      });
    }
    expect(withLeftOut.length).toBeGreaterThan(0);
    // Set aside is not forever: after their cool-down, items solved at step 1 were served again.
    expect(retested.size).toBeGreaterThan(0);
    for (const o of withLeftOut) {
      expect(['below-floor', 'above-ceiling']).toContain(o.reason);
      expect(topics.get(o.by)).toBe(topics.get(o.id));
    }
    feeder.close();
  });

  it('leaves a run without band-pass as planned, and records why another run left items out', () => {
    const feeder = bandFeeder(400, { bandPass: null, runs: { bp: BAND } });
    for (let s = 1; s <= 6; s++) {
      step(feeder, 'plain', () => 1, s);
      step(feeder, 'bp', () => 1, s);
    }
    const plain = feeder.itemDifficulties('plain');
    expect(plain.items.every((i) => !i.aside && i.setAside === 0)).toBe(true);
    expect(feeder.itemDifficulties('bp').items.some((i) => i.aside)).toBe(true);
    feeder.close();
  });

  it('a refused ack (count other than its rewards) changes nothing, and the batch can still be acked', () => {
    const feeder = bandFeeder(200, { bandPass: BAND });
    const l = leased(feeder.lease({ run: 'bad', rank: 0, worldSize: 1 }));
    const n = l.batch.items.length;
    const good = Array.from({ length: n }, () => ({ count: 2, rewards: [1, 0] }));
    const bad = good.map((r, i) => (i === n - 1 ? { count: 3, rewards: [1, 0] } : r));
    let err: unknown;
    try {
      feeder.ack({ run: 'bad', batchId: l.batch.id, leaseId: l.leaseId, rollouts: bad });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(FeederError);
    expect((err as FeederError).code).toBe('rollout-count-mismatch');
    expect(feeder.itemDifficulties('bad').items).toEqual([]);
    expect(feeder.runStatus('bad').ackedItems).toBe(0);
    expect(feeder.ack({ run: 'bad', batchId: l.batch.id, leaseId: l.leaseId, rollouts: good }).items).toBe(n);
    expect(feeder.itemDifficulty('bad', ids(l)[0]!)).toMatchObject({ rollouts: 2, passRate: 0.5 });
    feeder.close();
  });

  it('keeps the difficulty state across a restart, equal to what it was', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'difficulty-')), 'feeder.sqlite');
    let feeder = bandFeeder(300, { bandPass: BAND }, path);
    for (let s = 1; s <= 5; s++) step(feeder, 'r', (id) => (id.endsWith('3') ? 1 : 0.5), s);
    const before = feeder.itemDifficulties('r', '', 1000);
    feeder.close();
    feeder = openFeeder({ leaseMs: 60_000, difficulty: { bandPass: BAND } }, { path });
    expect(feeder.itemDifficulties('r', '', 1000)).toEqual(before);
    expect(before.items.length).toBeGreaterThan(10);
    feeder.close();
  });

  it("a restart in the middle of a run leaves the difficulty state equal to an uninterrupted run's", () => {
    const dir = mkdtempSync(join(tmpdir(), 'difficulty-'));
    const cfg = { bandPass: { ...BAND, exploreShare: 0.2 }, priorWeight: 2 };
    const reward = (id: string) =>
      Number(id.slice(3)) % 3 === 0 ? 1 : Number(id.slice(3)) % 3 === 1 ? 0 : 0.4;
    const straight = bandFeeder(300, cfg, join(dir, 'straight.sqlite'));
    for (let s = 1; s <= 30; s++) step(straight, 'r', reward, s);
    let restarted = bandFeeder(300, cfg, join(dir, 'restarted.sqlite'));
    for (let s = 1; s <= 30; s++) {
      if (s === 13) {
        restarted.close();
        restarted = openFeeder({ leaseMs: 60_000, difficulty: cfg }, { path: join(dir, 'restarted.sqlite') });
      }
      step(restarted, 'r', reward, s);
    }
    const state = (f: Feeder) => ({
      items: f.itemDifficulties('r', '', 1000),
      run: f.runStatus('r').difficulty,
    });
    expect(state(restarted)).toEqual(state(straight));
    expect(state(straight).run.setAside).toBeGreaterThan(0);
    straight.close();
    restarted.close();
  });

  it('with priors counting, sets aside unseen items of a topic the run always solves', () => {
    const feeder = bandFeeder(400, { bandPass: { ...BAND, minRollouts: 5 }, priorWeight: 5 });
    for (let s = 1; s <= 20; s++) step(feeder, 'prior', () => 1, s);
    const page = feeder.itemDifficulties('prior', '', 1000);
    expect(page.items.length).toBeGreaterThan(0);
    const unseen = poolItems(400).find(
      (it) => !page.items.some((r) => r.id === it.id) && it.topics[0] !== 'Botany',
    )!;
    const rec = feeder.itemDifficulty('prior', unseen.id);
    expect(rec.rollouts).toBe(0);
    expect(rec.prior).toBeGreaterThan(0.9);
    feeder.close();
  });
});

describe('choose: tables', () => {
  const peers = (id: string) => ['a', 'b', 'c', 'd'].filter(() => id.length > 0);
  const viewOf =
    (v: Record<string, Partial<ItemView>>) =>
    (id: string): ItemView => ({ rollouts: 5, rate: 0.5, aside: null, ...v[id] });

  it('with a target, a slot serves the peer nearest it (the planned item on a tie)', () => {
    const view = viewOf({ a: { rate: 0.9 }, b: { rate: 0.52 }, c: { rate: 0.1 }, d: { rate: 0.3 } });
    const r = choose({
      batchId: 'x',
      planned: [{ id: 'a', copy: 0 }],
      band: null,
      target: 0.5,
      targetProbe: 3,
      view,
      ...oneTopicEach(() => 'T', peers),
    });
    expect(r.slots).toEqual([{ id: 'b', copy: 0 }]);
    expect(r.leftOut).toEqual([{ slot: 0, id: 'a', reason: 'target', by: 'b' }]);
    const tie = choose({
      batchId: 'x',
      planned: [{ id: 'b', copy: 1 }],
      band: null,
      target: 0.52,
      targetProbe: 3,
      view,
      ...oneTopicEach(() => 'T', peers),
    });
    expect(tie.slots).toEqual([{ id: 'b', copy: 1 }]);
  });

  it('fills the explore share with unobserved peers, from the end of the batch', () => {
    const view = viewOf({ c: { rollouts: 0 }, d: { rollouts: 0 } });
    const band = { ...BAND, exploreShare: 0.5 };
    const r = choose({
      batchId: 'x',
      planned: [
        { id: 'a', copy: 0 },
        { id: 'b', copy: 0 },
      ],
      band,
      target: null,
      targetProbe: 4,
      view,
      ...oneTopicEach(() => 'T', peers),
    });
    expect(r.leftOut.map((l) => [l.slot, l.reason])).toEqual([[1, 'explore']]);
    expect(['c', 'd']).toContain(r.slots[1]!.id);
    expect(r.slots[0]!.id).toBe('a');
  });

  it('serves a set-aside item only when no peer is live, and a live peer twice before that', () => {
    const allAside = viewOf({
      a: { aside: 'above-ceiling' },
      b: { aside: 'below-floor' },
      c: { aside: 'above-ceiling' },
      d: { aside: 'below-floor' },
    });
    const kept = choose({
      batchId: 'x',
      planned: [{ id: 'a', copy: 0 }],
      band: BAND,
      target: null,
      targetProbe: 4,
      view: allAside,
      ...oneTopicEach(() => 'T', peers),
    });
    expect(kept).toEqual({ slots: [{ id: 'a', copy: 0 }], leftOut: [], servedAside: 1 });
    const oneLive = viewOf({
      a: { aside: 'above-ceiling' },
      b: { aside: 'above-ceiling' },
      c: { aside: 'below-floor' },
    });
    const twice = choose({
      batchId: 'x',
      planned: [
        { id: 'd', copy: 0 },
        { id: 'a', copy: 0 },
      ],
      band: BAND,
      target: null,
      targetProbe: 4,
      view: oneLive,
      ...oneTopicEach(() => 'T', peers),
    });
    expect(twice.slots.map((s) => s.id)).toEqual(['d', 'd']);
    expect(twice.servedAside).toBe(0);
  });
});

describe("band-pass keeps each batch to the plain plan's topics", () => {
  it('batch by batch, the served topics of a band-pass run are those of the same run fed plain', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1000 }), (seed) => {
        const plain = bandFeeder(300);
        const band = bandFeeder(300, { bandPass: { ...BAND, exploreShare: 0.25 } });
        const topics = new Map(poolItems(300).map((it) => [it.id, JSON.stringify([...it.topics].sort())]));
        const reward = (id: string) =>
          (Number(id.slice(3)) * 7 + seed) % 5 === 0 ? 0.4 : (Number(id.slice(3)) + seed) % 2;
        const count = (xs: string[]) => [...xs.map((id) => topics.get(id))].sort();
        let replaced = 0;
        for (let s = 1; s <= 40; s++) {
          const p = next(plain, 'same');
          const b = next(band, 'same');
          expect(b.batch.id).toBe(p.batch.id);
          expect(count(ids(b))).toEqual(count(ids(p)));
          replaced += b.leftOut?.length ?? 0;
          for (const [f, l] of [[plain, p] as const, [band, b] as const]) {
            f.ack({
              run: 'same',
              batchId: l.batch.id,
              leaseId: l.leaseId,
              step: s,
              rollouts: ids(l).map((id) => ({ count: 5, mean: reward(id) })),
            });
          }
        }
        expect(replaced).toBeGreaterThan(0);
        plain.close();
        band.close();
      }),
      { numRuns: 5 },
    );
  });
});

describe('config', () => {
  it('refuses a band whose floor is not below its ceiling, naming the path', () => {
    const r = Config.safeParse({ feeder: { difficulty: { bandPass: { floor: 0.8, ceiling: 0.8 } } } });
    expect(r.success).toBe(false);
    expect(formatIssues(r.error!)).toContain('feeder.difficulty.bandPass.floor: floor must be below ceiling');
    const perRun = Config.safeParse({
      feeder: { difficulty: { runs: { x: { floor: 0.9, ceiling: 0.1 } } } },
    });
    expect(formatIssues(perRun.error!)).toContain('feeder.difficulty.runs.x.floor');
  });

  it('takes the run and rate shapes of the feeder API: a run no trainer can name, a share above 1, refused', () => {
    const badRun = Config.safeParse({ feeder: { difficulty: { runs: { 'no run!': null } } } });
    expect(formatIssues(badRun.error!)).toContain('feeder.difficulty.runs.no run!');
    expect(formatIssues(badRun.error!)).toContain('a run is 1-128 of');
    const badShare = Config.safeParse({ feeder: { difficulty: { target: 1.5 } } });
    expect(formatIssues(badShare.error!)).toContain('feeder.difficulty.target');
    expect(Config.safeParse({ feeder: { difficulty: { runs: { 'grpo-7b.v2': null } } } }).success).toBe(true);
  });

  it('parses rollouts as one reward list or a mean with a count', () => {
    expect(Rollouts.safeParse({ count: 2, rewards: [0, 1] }).success).toBe(true);
    expect(Rollouts.safeParse({ count: 0, mean: 1 }).success).toBe(false);
  });
});
