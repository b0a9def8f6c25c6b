import type Database from 'better-sqlite3';
import type { AsideReason, BandPass, DifficultyConfig, LeftOut, Rollouts } from '../../schemas/feeder.js';
import { itemKey } from '../sampler/selection.js';
import type { Slot } from './order.js';

// Per-item difficulty (issue 44): what each run's acks say about each item, kept in the feeder's
// file and written in the ack's own transaction, so it is exactly as durable and exactly-once as
// the ack (a slot is acked once; a refused ack writes nothing). One row per (run, item) the run has
// acked and one per (run, group) of items: bounded by the pool, never by the run's length.

/** One item's record in one run, as stored. */
export interface DifficultyRow {
  run: string;
  id: string;
  /** Rollouts observed (a slot acked with a mean and no count is one rollout). */
  rollouts: number;
  /** Of them, passes: each reward clamped to [0, 1] and summed. */
  passes: number;
  reward_sum: number;
  acks: number;
  /** The exponentially weighted passes and rollouts, as of `ew_step`. */
  ew_pass: number;
  ew_n: number;
  ew_step: number;
  /** The latest trainer step acked. */
  step: number;
  /** Acked groups of two or more rollouts whose rewards were all equal (no GRPO advantage). */
  flat: number;
  /** Times the item was set aside. */
  set_aside: number;
  /** Set aside until this trainer step (exclusive), or null. */
  aside_until: number | null;
  aside_reason: AsideReason | null;
}

export const DIFFICULTY_SCHEMA = `
CREATE TABLE IF NOT EXISTS difficulty (
  run TEXT NOT NULL, id TEXT NOT NULL, rollouts INTEGER NOT NULL, passes REAL NOT NULL, reward_sum REAL NOT NULL,
  acks INTEGER NOT NULL, ew_pass REAL NOT NULL, ew_n REAL NOT NULL, ew_step INTEGER NOT NULL, step INTEGER NOT NULL,
  flat INTEGER NOT NULL, set_aside INTEGER NOT NULL, aside_until INTEGER, aside_reason TEXT,
  PRIMARY KEY (run, id)) WITHOUT ROWID;
-- Each run's topic shares of the slots it was planned and of those band-pass served (TopicShares):
-- what the topic budget is spent against.
CREATE TABLE IF NOT EXISTS difficulty_shares (run TEXT NOT NULL, topic TEXT NOT NULL, planned REAL NOT NULL, served REAL NOT NULL, PRIMARY KEY (run, topic)) WITHOUT ROWID;
-- Sums per topic and per topic and grade; an article's are summed from its items' rows when a prior
-- needs them (items_by_article), so an ack writes a few group rows, not one per slot.
CREATE TABLE IF NOT EXISTS difficulty_groups (run TEXT NOT NULL, key TEXT NOT NULL, passes REAL NOT NULL, rollouts INTEGER NOT NULL, PRIMARY KEY (run, key)) WITHOUT ROWID;
`;

export function difficultyStatements(db: Database.Database) {
  const p = (sql: string) => db.prepare(sql);
  return {
    get: p('SELECT * FROM difficulty WHERE run = ? AND id = ?'),
    put: p(
      `INSERT INTO difficulty (run, id, rollouts, passes, reward_sum, acks, ew_pass, ew_n, ew_step, step, flat, set_aside, aside_until, aside_reason)
       VALUES (@run, @id, @rollouts, @passes, @reward_sum, @acks, @ew_pass, @ew_n, @ew_step, @step, @flat, @set_aside, @aside_until, @aside_reason)
       ON CONFLICT (run, id) DO UPDATE SET rollouts = excluded.rollouts, passes = excluded.passes, reward_sum = excluded.reward_sum,
       acks = excluded.acks, ew_pass = excluded.ew_pass, ew_n = excluded.ew_n, ew_step = excluded.ew_step, step = excluded.step,
       flat = excluded.flat, set_aside = excluded.set_aside, aside_until = excluded.aside_until, aside_reason = excluded.aside_reason`,
    ),
    list: p('SELECT * FROM difficulty WHERE run = ? AND id > ? ORDER BY id LIMIT ?'),
    addGroup: p(
      `INSERT INTO difficulty_groups (run, key, passes, rollouts) VALUES (?, ?, ?, ?)
       ON CONFLICT (run, key) DO UPDATE SET passes = passes + excluded.passes, rollouts = rollouts + excluded.rollouts`,
    ),
    shares: p('SELECT topic, planned, served FROM difficulty_shares WHERE run = ?'),
    putShare: p(
      `INSERT INTO difficulty_shares (run, topic, planned, served) VALUES (?, ?, ?, ?)
       ON CONFLICT (run, topic) DO UPDATE SET planned = excluded.planned, served = excluded.served`,
    ),
    getGroup: p('SELECT passes, rollouts FROM difficulty_groups WHERE run = ? AND key = ?'),
    articleSums: p(
      `SELECT coalesce(sum(d.passes), 0) AS passes, coalesce(sum(d.rollouts), 0) AS rollouts
       FROM items i JOIN difficulty d ON d.run = ? AND d.id = i.id WHERE i.article_id = ?`,
    ),
    itemMeta: p(
      `SELECT topics, article_id, json_extract(body, '$.grade.difficulty') AS grade FROM items WHERE id = ?`,
    ),
  };
}
export type DifficultyStatements = ReturnType<typeof difficultyStatements>;

/** What one slot's ack says: its rollouts (passes summed over `count`), and whether they were flat. */
export interface Observation {
  count: number;
  passes: number;
  rewardSum: number;
  /** Two or more rollouts, all with the same reward. */
  flat: boolean;
}

const clamp01 = (x: number) => Math.min(1, Math.max(0, x));

/** Rewards further apart than this are not one mean: floating sums, not trainers, differ by less. */
const MEAN_TOLERANCE = 1e-6;

/** A refused slot: the reason code and what is wrong. */
export interface RolloutIssue {
  code: 'bad-rollout-reward' | 'rollout-count-mismatch' | 'bad-rollout' | 'reward-mismatch';
  reason: string;
}

/**
 * The observation of one acked slot from its rollouts (or, without them, from its mean reward as
 * one rollout), or why the ack is refused. Null: the slot carries nothing to observe.
 */
export function observe(
  rollouts: Rollouts | null | undefined,
  reward: number | null | undefined,
  at: string,
): Observation | null | RolloutIssue {
  if (!rollouts) {
    if (reward === null || reward === undefined) return null;
    return { count: 1, passes: clamp01(reward), rewardSum: reward, flat: false };
  }
  const { count, rewards, mean } = rollouts;
  if (rewards === undefined && mean === undefined)
    return { code: 'bad-rollout', reason: `${at}: rollouts carry their rewards or their mean` };
  if (rewards !== undefined) {
    const bad = rewards.findIndex((r) => !Number.isFinite(r));
    if (bad >= 0)
      return {
        code: 'bad-rollout-reward',
        reason: `${at}.rewards[${bad}] = ${rewards[bad]}: a reward is a finite number`,
      };
    if (rewards.length !== count)
      return {
        code: 'rollout-count-mismatch',
        reason: `${at}: count is ${count} but ${rewards.length} reward(s) were sent`,
      };
  }
  if (mean !== undefined && !Number.isFinite(mean))
    return { code: 'bad-rollout-reward', reason: `${at}.mean = ${mean}: a mean is a finite number` };
  const sum = rewards ? rewards.reduce((a, b) => a + b, 0) : mean! * count;
  const m = sum / count;
  const near = (a: number, b: number) =>
    Math.abs(a - b) <= MEAN_TOLERANCE * Math.max(1, Math.abs(a), Math.abs(b));
  if (rewards && mean !== undefined && !near(mean, m))
    return { code: 'reward-mismatch', reason: `${at}: mean ${mean} is not the mean of its rewards (${m})` };
  if (reward !== null && reward !== undefined && !near(reward, m))
    return {
      code: 'reward-mismatch',
      reason: `${at}: the slot's reward ${reward} is not the mean of its rollouts (${m})`,
    };
  const passes = rewards ? rewards.reduce((a, r) => a + clamp01(r), 0) : clamp01(m) * count;
  // With only a mean, the group is flat when it is all passes or all fails (rewards in [0, 1]).
  const flat =
    count >= 2 && (rewards ? rewards.every((r) => r === rewards[0]) : clamp01(m) === 0 || clamp01(m) === 1);
  return { count, passes, rewardSum: sum, flat };
}

export function isIssue(o: Observation | null | RolloutIssue): o is RolloutIssue {
  return o !== null && 'code' in o;
}

/** A record of an item no ack has reached yet. */
export function emptyRow(run: string, id: string): DifficultyRow {
  return {
    run,
    id,
    rollouts: 0,
    passes: 0,
    reward_sum: 0,
    acks: 0,
    ew_pass: 0,
    ew_n: 0,
    ew_step: 0,
    step: 0,
    flat: 0,
    set_aside: 0,
    aside_until: null,
    aside_reason: null,
  };
}

/**
 * The record after one observation at trainer step `step`. The weighted rate is
 * Σ passes·2^-(S-s)/h / Σ count·2^-(S-s)/h over observations at steps s, S the latest: recent steps
 * weigh more, so the rate follows a policy that moves; and it is the same whatever order the acks
 * of several ranks arrive in (an older step's observation is weighed down on arrival).
 */
export function updated(
  row: DifficultyRow,
  obs: Observation,
  step: number,
  halfLifeSteps: number,
): DifficultyRow {
  const decay = (d: number) => 0.5 ** (Math.max(0, d) / halfLifeSteps);
  const first = row.ew_n === 0;
  const at = first ? step : Math.max(row.ew_step, step);
  const old = first ? 0 : decay(at - row.ew_step);
  const fresh = decay(at - step);
  return {
    ...row,
    rollouts: row.rollouts + obs.count,
    passes: row.passes + obs.passes,
    reward_sum: row.reward_sum + obs.rewardSum,
    acks: row.acks + 1,
    ew_pass: row.ew_pass * old + obs.passes * fresh,
    ew_n: row.ew_n * old + obs.count * fresh,
    ew_step: at,
    step: Math.max(row.step, step),
    flat: row.flat + (obs.flat ? 1 : 0),
  };
}

/** The observed weighted pass rate, in [0, 1]; null before any rollout. */
export function passRate(row: Pick<DifficultyRow, 'ew_pass' | 'ew_n'>): number | null {
  return row.ew_n > 0 ? clamp01(row.ew_pass / row.ew_n) : null;
}

/** The observed rate blended with the prior, counted as `weight` rollouts at the prior's rate. */
export function blended(row: Pick<DifficultyRow, 'ew_pass' | 'ew_n'>, prior: number, weight: number): number {
  const n = row.ew_n + weight;
  return n > 0 ? clamp01((row.ew_pass + weight * prior) / n) : prior;
}

/** Why a rate is outside the band, or null inside it. */
export function outside(rate: number, band: BandPass): AsideReason | null {
  if (rate <= band.floor) return 'below-floor';
  if (rate >= band.ceiling) return 'above-ceiling';
  return null;
}

/** The band-pass of a run: its own entry in `runs`, else the default. */
export function bandOf(config: DifficultyConfig, run: string): BandPass | null {
  return Object.hasOwn(config.runs, run) ? config.runs[run]! : config.bandPass;
}

// ---- priors: what the run's acks say of an item's topic, grade and article -------------------

/** Pseudo-rollouts a group's rate is shrunk towards the wider group's with. */
const SHRINK = 10;

/**
 * The groups an item's observations count in: each topic, each topic with its grade (both kept as
 * sums in difficulty_groups), its article (summed from its items' records when asked).
 */
export function groupKeys(meta: ItemMeta): { topics: string[]; grades: string[]; article: string } {
  const bucket = meta.grade === null ? 'none' : String(Math.round(clamp01(meta.grade) * 4));
  return {
    topics: meta.topics.map((t) => `t\u0000${t}`),
    grades: meta.topics.map((t) => `g\u0000${t}\u0000${bucket}`),
    article: `a\u0000${meta.articleId}`,
  };
}

export interface ItemMeta {
  topics: readonly string[];
  articleId: string;
  /** The graded difficulty in [0, 1], or null. */
  grade: number | null;
}

/**
 * An item's prior pass rate in its run: the topics' rate (Laplace: 1/2 with no acks), shrunk to by
 * the rate of the topic's items of the same graded difficulty, shrunk to by the rate of the item's
 * article's other items. Each level speaks as its rollouts grow.
 */
export function prior(
  group: (key: string) => { passes: number; rollouts: number } | undefined,
  meta: ItemMeta,
): number {
  const keys = groupKeys(meta);
  const rate = (g: { passes: number; rollouts: number } | undefined, base: number) =>
    g ? (g.passes + SHRINK * base) / (g.rollouts + SHRINK) : base;
  const per = meta.topics.map((_, i) => {
    const t = group(keys.topics[i]!);
    const topic = t ? (t.passes + 1) / (t.rollouts + 2) : 0.5;
    return rate(group(keys.grades[i]!), topic);
  });
  const base = per.length ? per.reduce((a, b) => a + b, 0) / per.length : 0.5;
  return clamp01(rate(group(keys.article), base));
}

// ---- choosing what a batch serves -----------------------------------------------------------

/** What the choice reads of one item at the time of the cut. */
export interface ItemView {
  /** Rollouts observed in the run. */
  rollouts: number;
  /** The rate choice compares: observed blended with the prior. */
  rate: number;
  /** Why it is set aside now, or null: it may be served. */
  aside: AsideReason | null;
}

export interface ChoiceInput {
  /** The batch's id, which seeds where each slot's search among its topic's items starts. */
  batchId: string;
  planned: readonly Slot[];
  band: BandPass | null;
  target: number | null;
  targetProbe: number;
  view: (id: string) => ItemView;
  /** The topic whose quota a slot fills (sampledTopic); undefined for an item of no known topic. */
  sampledTopic: (slot: Slot) => string | undefined;
  /** The selection's items of a topic, in a fixed order. */
  itemsOf: (topic: string) => readonly string[];
  /** An item's topics. */
  topicsOf: (id: string) => readonly string[];
  /** The run's topic shares so far, planned and served: the batch's are added to them here. */
  shares: TopicShares;
}

/** What a batch serves of its planned slots. */
export interface Choice {
  slots: Slot[];
  /** The planned items not served, why, and what stood in. */
  leftOut: LeftOut[];
  /** Slots that serve their set-aside item: no live item of its topic was found within the budget. */
  servedAside: number;
}

/**
 * A run's topic shares of the slots it was planned and of those it was served: a slot counts 1,
 * split evenly over its item's topics (for single-topic items, the topic's count of slots).
 */
export interface TopicShares {
  planned: Map<string, number>;
  served: Map<string, number>;
}

/** Total variation distance between the served and the planned topic shares. */
export function sharesTvd(shares: TopicShares): number {
  const total = (m: Map<string, number>) => {
    let n = 0;
    for (const c of m.values()) n += c;
    return n;
  };
  const planned = total(shares.planned);
  const served = total(shares.served);
  if (planned === 0 || served === 0) return planned === served ? 0 : 1;
  let d = 0;
  for (const [t, c] of shares.planned) d += Math.abs((shares.served.get(t) ?? 0) / served - c / planned);
  for (const [t, c] of shares.served) if (!shares.planned.has(t)) d += c / served;
  return d / 2;
}

/** Candidates a slot looks at among its topic's items before it gives up. */
const PROBE = 128;
/** Live candidates a replacement compares (for the pass rate nearest the aim) without a target. */
const REPLACEMENT_CHOICES = 8;
/** Other topics a set-aside slot with no live item of its own looks in, most under-served first. */
const OTHER_TOPICS = 8;

/**
 * The slots a batch serves. A planned item set aside is replaced by a live item of the slot's
 * sampled topic, looked for among PROBE of its items from a start seeded by the batch and slot
 * (bounded, so a cut costs the same whatever a topic's size): one the band keeps and not in the
 * batch, else any live one, else a kept one already in the batch; among those found, an item of
 * the planned item's whole topic set first (it leaves the topic shares as planned), then the pass
 * rate nearest the target (0.5 without one: a group's chance of a signal is highest there). When
 * the topic has none, a kept item of another topic stands in, the most under-served first. A
 * replacement that changes the run's topic counts is taken only while the served shares stay
 * within `topicBudget` (TVD) of the planned ones (or move closer). None found: the planned item is
 * served. With a target, each slot takes the item nearest the target among itself and
 * `targetProbe` of its topic's items; then, with band-pass, observed items give way to unobserved
 * ones until `exploreShare` of the batch is unobserved.
 */
export function choose(input: ChoiceInput): Choice {
  const { planned, band, target, view, shares, topicsOf } = input;
  const budget = band?.topicBudget ?? 0;
  const inBatch = new Map<string, number>();
  // A slot is one unit of the shares, split evenly over its item's topics: both sides then always
  // total the slots cut, so a batch served as planned never moves the TVD away from the budget, and
  // checking each replacement against the budget keeps every batch within it.
  const bump = (m: Map<string, number>, id: string, by: number) => {
    const topics = topicsOf(id);
    for (const t of topics) m.set(t, (m.get(t) ?? 0) + by / topics.length);
  };
  for (const s of planned) {
    inBatch.set(s.id, (inBatch.get(s.id) ?? 0) + 1);
    bump(shares.planned, s.id, 1);
    bump(shares.served, s.id, 1);
  }
  const slots = planned.slice();
  const leftOut: LeftOut[] = [];
  let servedAside = 0;
  const sameTopics = (a: string, b: string) => {
    const x = topicsOf(a);
    const y = topicsOf(b);
    return x.length === y.length && x.every((t) => y.includes(t));
  };
  /** Whether slot i may serve `id`: the served shares stay within the budget, or come closer. */
  const fits = (i: number, id: string) => {
    const was = slots[i]!.id;
    if (sameTopics(was, id)) return true;
    const before = sharesTvd(shares);
    bump(shares.served, was, -1);
    bump(shares.served, id, 1);
    const after = sharesTvd(shares);
    bump(shares.served, id, -1);
    bump(shares.served, was, 1);
    return after <= Math.max(budget, before) + 1e-12;
  };
  const take = (i: number, id: string, reason: LeftOut['reason']) => {
    const was = slots[i]!.id;
    leftOut.push({ slot: i, id: was, reason, by: id });
    inBatch.set(was, inBatch.get(was)! - 1);
    inBatch.set(id, (inBatch.get(id) ?? 0) + 1);
    bump(shares.served, was, -1);
    bump(shares.served, id, 1);
    slots[i] = { id, copy: 0 };
  };
  /** Live items of `list` for slot i, not in the batch, up to `want`, from a start seeded by the slot. */
  const live = (
    i: number,
    list: readonly string[],
    want: number,
    ok: (v: ItemView) => boolean,
    twice = false,
  ) => {
    const out: string[] = [];
    if (list.length === 0) return out;
    const start = itemKey(`${input.batchId}#${i}`) % list.length;
    for (let k = 0; k < Math.min(PROBE, list.length) && out.length < want; k++) {
      const id = list[(start + k) % list.length]!;
      if (id === slots[i]!.id || (!twice && (inBatch.get(id) ?? 0) > 0)) continue;
      const v = view(id);
      if (v.aside === null && ok(v) && fits(i, id)) out.push(id);
    }
    return out;
  };
  const ownTopic = (i: number) => {
    const topic = input.sampledTopic(planned[i]!);
    return topic === undefined ? [] : input.itemsOf(topic);
  };
  const aim = target ?? (band ? 0.5 : null);
  const near = (v: ItemView) => (aim === null ? 0 : Math.abs(v.rate - aim));
  // A replacement is an item the band would keep: one back from its cool-down with a rate still
  // outside is re-tested in its own planned slot, not called in to stand for another.
  const kept = (v: ItemView) => !band || v.rollouts === 0 || outside(v.rate, band) === null;
  /** Topics other than slot i's, the most under-served against the plan first. */
  const otherTopics = (i: number) => {
    const own = new Set(topicsOf(planned[i]!.id));
    const gap = (t: string) => (shares.served.get(t) ?? 0) - (shares.planned.get(t) ?? 0);
    return [...shares.planned.keys()]
      .filter((t) => !own.has(t))
      .sort((a, b) => gap(a) - gap(b) || (a < b ? -1 : 1))
      .slice(0, OTHER_TOPICS);
  };
  for (let i = 0; i < slots.length; i++) {
    const v = view(slots[i]!.id);
    if (v.aside !== null) {
      const want = target === null ? REPLACEMENT_CHOICES : input.targetProbe;
      const list = ownTopic(i);
      let found = live(i, list, want, kept);
      if (found.length === 0) found = live(i, list, want, () => true);
      // A topic with few live items serves one twice in a batch (two groups of the same prompt
      // are two GRPO groups) rather than an item set aside.
      if (found.length === 0) found = live(i, list, want, kept, true);
      // The topic has no live item: the budget lets another topic's kept item stand in.
      if (found.length === 0 && budget > 0)
        for (const t of otherTopics(i)) {
          found = live(i, input.itemsOf(t), want, kept, true);
          if (found.length) break;
        }
      if (found.length) {
        const was = slots[i]!.id;
        const rank = (id: string) => (sameTopics(was, id) ? 0 : 2) + near(view(id));
        found.sort((a, b) => rank(a) - rank(b));
        take(i, found[0]!, v.aside);
      } else servedAside++;
    } else if (target !== null) {
      let best = slots[i]!.id;
      let bestGap = near(v);
      for (const id of live(i, ownTopic(i), input.targetProbe, () => true)) {
        const gap = near(view(id));
        if (gap < bestGap) [best, bestGap] = [id, gap];
      }
      if (best !== slots[i]!.id) take(i, best, 'target');
    }
  }
  if (band && band.exploreShare > 0) {
    let need =
      Math.ceil(band.exploreShare * slots.length) - slots.filter((s) => view(s.id).rollouts === 0).length;
    for (let i = slots.length - 1; i >= 0 && need > 0; i--) {
      if (view(slots[i]!.id).rollouts === 0) continue;
      const [id] = live(i, ownTopic(i), 1, (v) => v.rollouts === 0);
      if (id === undefined) continue;
      take(i, id, 'explore');
      need--;
    }
  }
  return { slots, leftOut, servedAside };
}
