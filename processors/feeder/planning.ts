import type { MixState } from '../../schemas/mix-state.js';
import { copiesOf, heldOutArticles } from '../sampler/selection.js';
import type { Slot } from './order.js';
import type { Statements } from './store.js';

// Epochs and their plans, made a slice at a time: a selection of the pool for a mix, and an
// epoch's order, are work that grows with the pool, so they run as generators the feeder steps
// through between requests, never as one long turn of the event loop.

/** How long one turn of the event loop may spend planning epochs ahead. */
export const PLAN_SLICE_MS = 2;

/** A run's next epoch planned ahead: its order and stored form once `steps` is done. */
export interface AheadPlan {
  epoch: number;
  version: number;
  selection: unknown;
  slots: Slot[] | null;
  json: string | null;
  steps: Generator<void, void> | null;
}

/** The steps of a plan ahead: the order, then its stored form a chunk at a time. */
export function* planSteps(plan: AheadPlan, order: Generator<void, Slot[]>): Generator<void, void> {
  let step = order.next();
  while (!step.done) {
    yield;
    step = order.next();
  }
  const slots = step.value;
  const parts: string[] = [];
  for (let k = 0; k < slots.length; k += 4096) {
    parts.push(JSON.stringify(slots.slice(k, k + 4096).map((s) => [s.id, s.copy])).slice(1, -1));
    yield;
  }
  plan.json = `[${parts.join(',')}]`;
  plan.slots = slots;
}

/** An item of a selection: its copies in an epoch, and its topics (band-pass replaces within them). */
type SelectedItem = { id: string; copies: number; topics: readonly string[] };

/** A mix's selection over the pool (of one pool version), pool order. */
export interface Selected {
  mix: MixState;
  pool: number;
  items: readonly SelectedItem[];
}

/** Pool rows read per step of a selection. */
const SELECT_PAGE = 512;

/**
 * The mix's copies of each pool item, less every QA of a held-out article (heldOutArticles, the
 * exports' rule: no QA of an article held out for evaluation is ever leased for training), in
 * steps of a page of rows (a yield between them). Pages by id: an open SQLite iterator would keep
 * the connection busy for the requests answered between steps.
 */
function* selectSteps(q: Statements, mix: MixState): Generator<void, SelectedItem[]> {
  const pool: {
    id: string;
    articleId: string;
    topics: string[];
    source: string;
    published: string | null;
  }[] = [];
  const held = new Set<string>();
  for (let after = ''; ; yield) {
    const rows = q.itemsAfter.all(after, SELECT_PAGE) as {
      id: string;
      article_id: string;
      topics: string;
      source: string;
      published: string | null;
    }[];
    for (const row of rows) {
      pool.push({
        id: row.id,
        articleId: row.article_id,
        topics: JSON.parse(row.topics) as string[],
        source: row.source,
        published: row.published,
      });
    }
    for (const article of heldOutArticles(pool.slice(pool.length - rows.length), mix.heldOut))
      held.add(article);
    if (rows.length < SELECT_PAGE) break;
    after = rows.at(-1)!.id;
  }
  const out: SelectedItem[] = [];
  for (const [k, item] of pool.entries()) {
    const copies = held.has(item.articleId) ? 0 : copiesOf(mix, item);
    if (copies > 0) out.push({ id: item.id, copies, topics: item.topics });
    if (k % SELECT_PAGE === SELECT_PAGE - 1) yield;
  }
  return out;
}

/**
 * The mix's selection over the pool: the one made last, which every run's plan reads (walking the
 * pool for each, 100,000 items, was the feeder's tail latency), and the one being made for a newer
 * mix version or pool, in slices (made in one piece it held the event loop for ~300 ms, and no
 * lease was answered meanwhile). Plans follow the mix of the one made last (planMix).
 */
export class Selections {
  private current: Selected | null = null;
  private pending: { mix: MixState; pool: number; steps: Generator<void, SelectedItem[]> } | null = null;
  /** Counts the pool's changes: a selection is of one pool. */
  private poolVersion = 0;

  constructor(
    private readonly q: Statements,
    /** The newest mix the feeder holds. */
    private readonly mixOf: () => MixState | null,
    /** Asks the feeder for background turns (its schedule), where slice() is called. */
    private readonly schedule: () => void,
  ) {}

  /** Items came into the pool. */
  poolChanged(): void {
    this.poolVersion++;
    this.reselect();
  }

  /** The selection as of now, finished in one piece if the one under way is not done. */
  selection(): Selected {
    if (this.current?.mix !== this.mixOf() || this.current.pool !== this.poolVersion) this.start();
    if (!this.current) {
      const pending = this.pending!;
      let step = pending.steps.next();
      while (!step.done) step = pending.steps.next();
      this.current = { mix: pending.mix, pool: pending.pool, items: step.value };
      this.pending = null;
    }
    return this.current;
  }

  /** The mix plans follow: the selection's made last (the newest before any is made). */
  get planMix(): MixState {
    return this.current?.mix ?? this.mixOf()!;
  }

  /** Resolves once the selection of the newest mix over the pool as it is has been made. */
  async made(): Promise<void> {
    while (this.mixOf() && (this.current?.mix !== this.mixOf() || this.current.pool !== this.poolVersion)) {
      this.start();
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /**
   * The pool or the mix changed: a selection for runs to plan from is made again, in the
   * background, only if a run exists (a feeder nobody leases from never reads its pool; the first
   * lease makes one).
   */
  reselect(): void {
    if (this.q.anyRun.get()) this.start();
  }

  /**
   * Starts making the selection of the newest mix over the pool as it is, unless one is under way:
   * that one finishes first, then the next starts for what changed meanwhile (slice).
   * Restarted at each change instead, a selection of a large pool never finished while items kept
   * coming, and each restart read the pool again.
   */
  private start(): void {
    if (this.pending) return;
    const mix = this.mixOf()!;
    this.pending = { mix, pool: this.poolVersion, steps: selectSteps(this.q, mix) };
    this.schedule();
  }

  /** Advances the selection being made until `until`; true while it is unfinished. */
  slice(until: number): boolean {
    const pending = this.pending;
    if (!pending) return false;
    while (performance.now() < until) {
      const step = pending.steps.next();
      if (!step.done) continue;
      // Runs re-plan for it at their next lease or prepare (a new mix version), or plan their
      // next epoch with it (new items).
      this.current = { mix: pending.mix, pool: pending.pool, items: step.value };
      this.pending = null;
      if (pending.mix !== this.mixOf() || pending.pool !== this.poolVersion) this.reselect();
      return this.pending !== null;
    }
    return true;
  }
}
