import type Database from 'better-sqlite3';
import type { FeederConfig, ItemDifficulty, ItemDifficultyPage } from '../../schemas/feeder.js';
import type { MixState } from '../../schemas/mix-state.js';
import { sampledTopic } from '../sampler/selection.js';
import {
  bandOf,
  blended,
  type Choice,
  choose,
  type DifficultyRow,
  type DifficultyStatements,
  difficultyStatements,
  emptyRow,
  groupKeys,
  type ItemMeta,
  type ItemView,
  type Observation,
  outside,
  passRate,
  prior,
  type TopicShares,
  updated,
} from './difficulty.js';
import type { Slot } from './order.js';
import type { Selections } from './planning.js';
import type { RunRow } from './store.js';

// Each run's per-item difficulty records in the feeder's file, as acks write them, and the
// band-pass choice that reads them when a batch is cut (difficulty.ts has the rules; this is
// where they meet the file, the pool and the selection).

/** The sums of a group of items (a topic, a grade) added by one ack: the priors' counts. */
export type GroupSums = Map<string, { passes: number; rollouts: number }>;

export class DifficultyRecords {
  private readonly d: DifficultyStatements;
  /** The selection's items by topic and each item's topics (band-pass replaces within a topic). */
  private topicIndex: TopicIndex | null = null;
  /** Items' topics, article and grade (difficulty.ts ItemMeta): one entry per pool item at most. */
  private readonly metas = new Map<string, ItemMeta>();

  constructor(
    db: Database.Database,
    private readonly config: FeederConfig['difficulty'],
    private readonly selections: Selections,
  ) {
    this.d = difficultyStatements(db);
  }

  /** An item's topics or article changed: its meta is read from the file again. */
  forget(id: string): void {
    this.metas.delete(id);
  }

  /** One item's record in a run, or null when no ack reached it. */
  row(run: string, id: string): DifficultyRow | undefined {
    return this.d.get.get(run, id) as DifficultyRow | undefined;
  }

  /** An item's record in a run as the API shows it. */
  item(run: string, id: string, runStep: number): ItemDifficulty {
    return this.describe(this.row(run, id) ?? emptyRow(run, id), runStep);
  }

  /** A page of a run's item records by id, after `after`. */
  page(run: string, runStep: number, after: string, limit: number): ItemDifficultyPage {
    const rows = this.d.list.all(run, after, limit) as DifficultyRow[];
    return {
      run,
      step: runStep,
      items: rows.map((row) => this.describe(row, runStep)),
      next: rows.length === limit ? rows.at(-1)!.id : null,
    };
  }

  /**
   * One ack's observations of its slots into their items' records and their groups' sums (the
   * priors'): returns how many items band-pass set aside. Runs inside the ack's transaction.
   */
  observeAll(run: string, step: number, observed: readonly { id: string; obs: Observation }[]): number {
    // The groups' sums once per key per ack: a batch's slots share their topics.
    const groups: GroupSums = new Map();
    let aside = 0;
    for (const { id, obs } of observed) if (this.observe(run, id, obs, step, groups)) aside++;
    for (const [key, g] of groups) this.d.addGroup.run(run, key, g.passes, g.rollouts);
    return aside;
  }

  /**
   * The slots a batch serves of its planned ones: as planned without band-pass or a target; else
   * difficulty.ts's choice, which keeps each slot's sampled topic or spends the run's topic budget
   * (its topic shares, planned and served, kept in the file in the cut's transaction).
   */
  chooseFor(run: RunRow, batchId: string, planned: Slot[]): Choice {
    const cfg = this.config;
    const band = bandOf(cfg, run.run);
    if (!band && cfg.target === null) return { slots: planned, leftOut: [], servedAside: 0 };
    const index = this.topics();
    const w = cfg.priorWeight;
    const views = new Map<string, ItemView>();
    const view = (id: string): ItemView => {
      let v = views.get(id);
      if (v) return v;
      const row = this.row(run.run, id);
      const needPrior = w > 0 || (cfg.target !== null && !row);
      const meta = needPrior ? this.metaOf(id) : null;
      const p = meta ? this.priorOf(run.run, meta) : 0.5;
      const rate = row ? blended(row, p, w) : p;
      let aside: ItemView['aside'] = null;
      if (band && row?.aside_until != null && row.aside_until > run.step) aside = row.aside_reason;
      // An item no ack has reached is set aside on its prior alone when the prior counts enough.
      else if (band && !row && w >= band.minRollouts) aside = outside(p, band);
      v = { rollouts: row?.rollouts ?? 0, rate, aside };
      views.set(id, v);
      return v;
    };
    const rows = this.d.shares.all(run.run) as { topic: string; planned: number; served: number }[];
    const shares: TopicShares = {
      planned: new Map(rows.map((r) => [r.topic, r.planned])),
      served: new Map(rows.map((r) => [r.topic, r.served])),
    };
    const topicsOf = (id: string) => index.topicsOf.get(id) ?? this.metaOf(id)?.topics ?? [];
    const choice = choose({
      batchId,
      planned,
      band,
      target: cfg.target,
      targetProbe: cfg.targetProbe,
      view,
      sampledTopic: (slot) => sampledTopic(index.mix, { id: slot.id, topics: topicsOf(slot.id) }, slot.copy),
      itemsOf: (topic) => index.itemsOf.get(topic) ?? [],
      topicsOf,
      shares,
    });
    // Only the topics the batch touched: a mix of hundreds of topics writes a few rows a cut.
    const was = new Map(rows.map((r) => [r.topic, r]));
    for (const topic of new Set([...shares.planned.keys(), ...shares.served.keys()])) {
      const planned = shares.planned.get(topic) ?? 0;
      const served = shares.served.get(topic) ?? 0;
      if (was.get(topic)?.planned !== planned || was.get(topic)?.served !== served)
        this.d.putShare.run(run.run, topic, planned, served);
    }
    return choice;
  }

  private describe(row: DifficultyRow, runStep: number): ItemDifficulty {
    const meta = this.metaOf(row.id);
    const w = this.config.priorWeight;
    const p = meta ? this.priorOf(row.run, meta) : 0.5;
    return {
      run: row.run,
      id: row.id,
      topics: meta ? [...meta.topics] : [],
      rollouts: row.rollouts,
      passes: row.passes,
      meanReward: row.rollouts ? row.reward_sum / row.rollouts : null,
      acks: row.acks,
      step: row.step,
      passRate: passRate(row),
      prior: p,
      rate: blended(row, p, w),
      flatGroups: row.flat,
      setAside: row.set_aside,
      asideUntil: row.aside_until,
      asideReason: row.aside_reason,
      aside: row.aside_until !== null && row.aside_until > runStep,
    };
  }

  /** An item's topics, article and grade, read from the file once (the cache holds the pool). */
  private metaOf(id: string): ItemMeta | null {
    const held = this.metas.get(id);
    if (held) return held;
    const m = this.d.itemMeta.get(id) as
      | { topics: string; article_id: string; grade: number | null }
      | undefined;
    if (!m) return null;
    const meta = { topics: JSON.parse(m.topics) as string[], articleId: m.article_id, grade: m.grade };
    this.metas.set(id, meta);
    return meta;
  }

  private priorOf(run: string, meta: ItemMeta): number {
    return prior((key) => {
      if (key.startsWith('a\u0000')) {
        const a = this.d.articleSums.get(run, meta.articleId) as { passes: number; rollouts: number };
        return a.rollouts > 0 ? a : undefined;
      }
      return this.d.getGroup.get(run, key) as { passes: number; rollouts: number } | undefined;
    }, meta);
  }

  /**
   * One acked slot's observation into its item's record and its groups' (the prior's), and the
   * run's band-pass decision: set aside until `cooldownSteps` after this step, or live. Runs inside
   * the ack's transaction.
   */
  private observe(run: string, id: string, obs: Observation, step: number, groups: GroupSums): boolean {
    const cfg = this.config;
    const before = this.row(run, id) ?? emptyRow(run, id);
    const row = updated(before, obs, step, cfg.halfLifeSteps);
    const meta = this.metaOf(id);
    const band = bandOf(cfg, run);
    row.aside_until = null;
    row.aside_reason = null;
    if (band) {
      const w = cfg.priorWeight;
      const rate = blended(row, meta && w > 0 ? this.priorOf(run, meta) : 0.5, w);
      const why = row.rollouts + w >= band.minRollouts ? outside(rate, band) : null;
      if (why) {
        row.aside_until = step + band.cooldownSteps;
        row.aside_reason = why;
        row.set_aside++;
      }
    }
    this.d.put.run(row);
    if (meta) {
      const keys = groupKeys(meta);
      for (const key of [...keys.topics, ...keys.grades]) {
        const g = groups.get(key) ?? { passes: 0, rollouts: 0 };
        g.passes += obs.passes;
        g.rollouts += obs.count;
        groups.set(key, g);
      }
    }
    return row.aside_until !== null;
  }

  /** The selection's items by topic, made once per selection. */
  private topics(): TopicIndex {
    const { mix, items } = this.selections.selection();
    if (this.topicIndex?.of === items) return this.topicIndex;
    const itemsOf = new Map<string, string[]>();
    const topicsOf = new Map<string, readonly string[]>();
    for (const it of items) {
      topicsOf.set(it.id, it.topics);
      for (const t of it.topics) {
        const list = itemsOf.get(t);
        if (list) list.push(it.id);
        else itemsOf.set(t, [it.id]);
      }
    }
    this.topicIndex = { of: items, mix, itemsOf, topicsOf };
    return this.topicIndex;
  }
}

interface TopicIndex {
  of: unknown;
  mix: MixState;
  itemsOf: Map<string, string[]>;
  topicsOf: Map<string, readonly string[]>;
}
