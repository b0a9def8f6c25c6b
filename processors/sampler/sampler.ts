import type { Analytics } from '../../analytics/clickhouse.js';
import { masteryByTopic } from '../../analytics/qa-store.js';
import type { SamplerConfig } from '../../schemas/config.js';
import type { QaWithdrawal } from '../../schemas/dedup.js';
import type { MixState } from '../../schemas/mix-state.js';
import type { ClassifiedQa } from '../../schemas/qa.js';
import type { Reference } from '../../schemas/reference.js';
import type { Processor, StateStore, StepContext } from '../../topology/processor.js';
import { keptShare, mixStateOf, selectionParams } from './mix.js';
import { rewardPolicyMove, type TopicMastery } from './reward-policy.js';
import { computeSelection, ItemIndex, itemKey } from './selection.js';

export interface SamplerOptions {
  readonly config: SamplerConfig;
  readonly reference: Reference;
  readonly taxonomy: MixState['taxonomy'];
  /** Where the reward policy reads mean rewards by topic; none without the policy. */
  readonly analytics?: Analytics;
}

/** What the sampler reads and writes: the graph declares it the same whether it runs or not. */
export const SAMPLER = {
  name: 'sampler',
  description:
    'α-smoothed target mix, per-topic quotas, TVD and yield; recomputed on new data and on a timer',
  reads: ['qa.classified', 'qa.withdrawn'],
  writes: ['mix.state'],
  stores: ['mix'],
  // The selection spans every topic of every partition.
  scope: 'global',
} as const satisfies Omit<Processor, 'process'>;

/** The key of the one record on the compacted mix.state topic. */
export const MIX_KEY = 'mix';

/** [itemKey, topics, source, published, itemKey of the article (absent in chunks from before)]. */
type StoredItem = [number, string[], string, string | null, number?];
/** An item withdrawn (qa.withdrawn), in the chunks in the order it came among the items. */
type StoredWithdrawal = [number, 'withdrawn'];
type StoredEntry = StoredItem | StoredWithdrawal;

/** What the store holds besides the items: how many chunks, and the last mix. */
interface Meta {
  readonly chunks: number;
  readonly version: number;
  /** The index's revision when the last mix was computed: another now means the mix is stale. */
  readonly mixedItems: number;
}

const NO_META: Meta = { chunks: 0, version: 0, mixedItems: 0 };

/**
 * qa.classified -> mix.state: keeps every classified item (id key, topics, source, date) and
 * recomputes the α-smoothed selection on new items and on a timer, each result a new version.
 *
 * The store is the truth: each step appends its new items as one chunk, so a restart reads the
 * chunks back, and the in-memory index is only a cache of them. If a step's writes were rolled
 * back (its transaction aborted), the chunk count in the store no longer matches the cache and
 * the next step rebuilds it; items are keyed by id, so a replayed input adds nothing.
 */
export function samplerProcessor(opts: SamplerOptions): Processor {
  const params = selectionParams(opts.config, opts.reference);
  let index = new ItemIndex();
  let chunks = -1;
  let previous: Uint16Array | null = null;
  let lastAt = Number.NEGATIVE_INFINITY;
  let lastCost = 0;

  const sync = (store: StateStore): Meta => {
    const meta = store.get<Meta>('meta') ?? NO_META;
    if (meta.chunks !== chunks) {
      index = new ItemIndex();
      for (let k = 0; k < meta.chunks; k++) {
        for (const entry of store.get<StoredEntry[]>(`items:${k}`) ?? []) {
          if (entry[1] === 'withdrawn') index.withdraw(entry[0]);
          else index.addKeyed(...entry);
        }
      }
      chunks = meta.chunks;
      previous = null;
    }
    return meta;
  };

  const policy = opts.config.rewardPolicy;
  // The mean rewards the policy last read, and those the last mix was computed with.
  let mastery: readonly TopicMastery[] = [];
  let mixedMastery: readonly TopicMastery[] = [];
  let masteryReadAt = Number.NEGATIVE_INFINITY;

  const recompute = (ctx: StepContext, meta: Meta, reason: string): Meta => {
    const started = performance.now();
    let selection = computeSelection(index, params);
    // The policy moves weight within its budget of the α-target this selection follows.
    const move = policy.enabled ? rewardPolicyMove(selection.target, mastery, policy) : null;
    if (move) selection = computeSelection(index, { ...params, weights: move.weights });
    const mix = mixStateOf({
      selection,
      params,
      reference: opts.reference,
      taxonomy: opts.taxonomy,
      version: meta.version + 1,
      at: new Date(ctx.now()),
      reason: move ? `${reason}; ${move.reason}` : reason,
      kept: keptShare(previous, selection.copies),
      policy: move,
    });
    ctx.emit('mix.state', MIX_KEY, mix);
    previous = selection.copies;
    mixedMastery = mastery;
    lastAt = performance.now();
    lastCost = lastAt - started;
    ctx.log.info(
      { version: mix.version, reason: mix.reason, ...mix.metrics, ms: Math.round(lastCost) },
      'mix',
    );
    return { ...meta, version: mix.version, mixedItems: index.revision };
  };

  /** Reads mean rewards by topic when the policy is on and they are due; says whether they changed. */
  const refreshMastery = async (now: number): Promise<boolean> => {
    if (!policy.enabled || !opts.analytics || now - masteryReadAt < policy.refreshMs) return false;
    masteryReadAt = now;
    mastery = await masteryByTopic(opts.analytics);
    return JSON.stringify(mastery) !== JSON.stringify(mixedMastery);
  };

  return {
    ...SAMPLER,
    async process(batch, ctx) {
      const store = ctx.store('mix');
      let meta = sync(store);
      const added: StoredEntry[] = [];
      for (const record of batch) {
        if (record.topic === 'qa.withdrawn') {
          const key = itemKey((record.value as QaWithdrawal).qaId);
          if (index.withdraw(key)) added.push([key, 'withdrawn']);
          continue;
        }
        const { candidate, classification } = record.value as ClassifiedQa;
        const item: StoredItem = [
          itemKey(candidate.id),
          [...new Set(classification.labels.map((l) => l.category))],
          candidate.provenance.source,
          candidate.provenance.published,
          itemKey(candidate.articleId),
        ];
        if (index.addKeyed(...item)) added.push(item);
      }
      if (added.length > 0) {
        store.put(`items:${meta.chunks}`, added);
        meta = { ...meta, chunks: meta.chunks + 1 };
        chunks = meta.chunks;
      }
      // Recompute at once unless that would spend more than a fifth of the time recomputing
      // (millions of items arriving fast); the timer catches up with what this skips.
      if (index.revision !== meta.mixedItems && performance.now() - lastAt >= 4 * lastCost) {
        meta = recompute(ctx, meta, 'new data');
      }
      store.put('meta', meta);
    },
    punctuate: {
      everyMs: opts.config.intervalMs,
      async run(ctx) {
        const store = ctx.store('mix');
        const meta = sync(store);
        const rewardsMoved = await refreshMastery(ctx.now());
        if (index.revision !== meta.mixedItems) store.put('meta', recompute(ctx, meta, 'timer: new items'));
        else if (rewardsMoved && index.size > 0)
          store.put('meta', recompute(ctx, meta, 'timer: rewards moved'));
      },
    },
  };
}
