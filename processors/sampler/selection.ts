import type { HeldOut, MixState, TopicQuota } from '../../schemas/mix-state.js';
import { type Distribution, normalise, smoothedShares } from './smoothing.js';

// The selection is coordinated sampling with permanent random numbers (what statistics offices
// use to keep survey panels stable between waves): every item carries a fixed u in [0, 1) from
// a hash of its id and the seed, and a topic takes its items in u order up to its quota. When the
// data grows and the quotas grow with it, each topic's cut-off u barely moves, so the items
// selected before stay selected; an item leaves only when a topic's rate (quota per item) falls.
// The cut-offs are published in the mix (TopicQuota.level/threshold), so the feeder, an export or
// a reader in another process applies the same rule to one item without the others (copiesOf).

/** What the sampler needs of a classified QA item. */
export interface MixItem {
  readonly id: string;
  readonly topics: readonly string[];
  readonly source: string;
  readonly published: string | null;
}

const TWO_32 = 2 ** 32;
const TWO_53 = 2 ** 53;

/** A 53-bit hash of an item id (cyrb53), independent of the seed: the item's key. */
export function itemKey(id: string): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < id.length; i++) {
    const ch = id.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (h2 & 0x1fffff) * TWO_32 + (h1 >>> 0);
}

function fmix32(x: number): number {
  let h = x;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** The item's permanent random number under a seed: uniform in [0, 1), 53 bits. */
export function uniformOf(key: number, seed: number): number {
  const lo = key >>> 0;
  const hi = Math.floor(key / TWO_32);
  const s = fmix32(seed ^ 0x9e3779b9);
  const a = fmix32(lo ^ s);
  const b = fmix32((hi ^ Math.imul(a, 0x27d4eb2f) ^ s) >>> 0);
  return ((b & 0x1fffff) * TWO_32 + fmix32(a ^ b)) / TWO_53;
}

/** YYYY, YYYY-MM or YYYY-MM-DD as a comparable number (YYYYMMDD, missing parts 0). */
export function dateNumber(date: string): number {
  const [y = '0', m = '0', d = '0'] = date.split('-');
  return Number(y) * 10_000 + Number(m) * 100 + Number(d);
}

export function isHeldOut(spec: HeldOut, item: Pick<MixItem, 'topics' | 'source' | 'published'>): boolean {
  // A work linked from several sources is `biorxiv+pubmed`: held out if any of them is.
  if (item.source.split('+').some((s) => spec.sources.includes(s))) return true;
  if (spec.topics.some((t) => item.topics.includes(t))) return true;
  return (
    spec.publishedFrom !== null &&
    item.published !== null &&
    dateNumber(item.published) >= dateNumber(spec.publishedFrom)
  );
}

/**
 * The articles held out for evaluation, one rule for the live pool and every export: an article is
 * held out when any of its QA is (a held-out topic among its labels, its source, its publication
 * date), so an article never feeds training through one QA while another of its QA is held out.
 */
export function heldOutArticles(
  items: Iterable<Pick<MixItem, 'topics' | 'source' | 'published'> & { readonly articleId: string }>,
  heldOut: HeldOut,
): Set<string> {
  const out = new Set<string>();
  for (const i of items) if (isHeldOut(heldOut, i)) out.add(i.articleId);
  return out;
}

/** How many times one topic's rule takes an item with this draw. */
function copiesFor(q: Pick<TopicQuota, 'level' | 'threshold'>, draw: number): number {
  if (q.level === 0) return 0;
  return q.level - 1 + (draw < q.threshold ? 1 : 0);
}

/** How many copies of an item the mix's training selection holds (0: not selected, or held out). */
export function copiesOf(mix: Pick<MixState, 'seed' | 'quotas' | 'heldOut'>, item: MixItem): number {
  if (isHeldOut(mix.heldOut, item)) return 0;
  let damp = 1;
  for (const t of item.topics) damp = Math.min(damp, mix.quotas[t]?.damp ?? 1);
  const draw = uniformOf(itemKey(item.id), mix.seed) / damp;
  // A damped draw past 1 is never taken, whatever the level.
  if (draw >= 1) return 0;
  let copies = 0;
  for (const t of item.topics) {
    const q = mix.quotas[t];
    if (q) copies = Math.max(copies, copiesFor(q, draw));
  }
  return copies;
}

/**
 * The topic whose rule took copy `copy` of an item (copiesOf): of the topics whose rule takes the
 * item more than `copy` times, the one the mix upsamples most (the scarcest, whose quota the copy
 * fills), ties by name; the item's first topic when no rule takes it that often (a padding slot).
 * Band-pass replaces a slot's item with another item of this topic, so a multi-topic item's slot is
 * kept for the topic that asked for it.
 */
export function sampledTopic(
  mix: Pick<MixState, 'seed' | 'quotas'>,
  item: Pick<MixItem, 'id' | 'topics'>,
  copy: number,
): string | undefined {
  if (item.topics.length <= 1) return item.topics[0];
  let damp = 1;
  for (const t of item.topics) damp = Math.min(damp, mix.quotas[t]?.damp ?? 1);
  const draw = uniformOf(itemKey(item.id), mix.seed) / damp;
  let best: string | undefined;
  for (const t of item.topics) {
    const q = mix.quotas[t];
    if (!q || copiesFor(q, draw) <= copy) continue;
    const b = best === undefined ? undefined : mix.quotas[best]!;
    if (!b || q.upsample > b.upsample || (q.upsample === b.upsample && t < best!)) best = t;
  }
  return best ?? item.topics[0];
}

/**
 * Every item the sampler has seen, in columns: ids are kept only as 53-bit keys, topics as
 * indices in one flat list, so 3.45M items fit in a few hundred MB and a recompute walks arrays.
 */
export class ItemIndex {
  readonly categories: string[] = [];
  readonly sources: string[] = [];
  private readonly categoryIndex = new Map<string, number>();
  private readonly sourceIndex = new Map<string, number>();
  private readonly position = new Map<number, number>();
  readonly keys: number[] = [];
  /** Item i's topics are topicList[topicStart[i] .. topicStart[i + 1]). */
  readonly topicStart: number[] = [0];
  readonly topicList: number[] = [];
  readonly source: number[] = [];
  /** dateNumber(published), 0 when unknown. */
  readonly published: number[] = [];
  /** itemKey of the item's article (its own key when unknown): the held-out rule holds out articles. */
  readonly article: number[] = [];
  /** 1 for an item withdrawn from the dataset (qa.withdrawn): in no selection, no count. */
  readonly withdrawn: number[] = [];
  /** Keys withdrawn, whether their item came before the withdrawal or comes after it. */
  private readonly withdrawnKeys = new Set<number>();
  private withdrawnHere = 0;

  get size(): number {
    return this.keys.length;
  }

  /** Items in the index that were withdrawn. */
  get withdrawnItems(): number {
    return this.withdrawnHere;
  }

  /** Changes whenever the index does: an item added or withdrawn. */
  get revision(): number {
    return this.keys.length + this.withdrawnKeys.size;
  }

  /** Withdraws an item by key, now or when it comes; false (and no change) when already withdrawn. */
  withdraw(key: number): boolean {
    if (this.withdrawnKeys.has(key)) return false;
    this.withdrawnKeys.add(key);
    const i = this.position.get(key);
    if (i !== undefined) {
      this.withdrawn[i] = 1;
      this.withdrawnHere++;
    }
    return true;
  }

  /** Adds an item; false (and no change) when its id is already in. */
  add(item: MixItem & { readonly articleId?: string }): boolean {
    const key = itemKey(item.id);
    const article = item.articleId === undefined ? key : itemKey(item.articleId);
    return this.addKeyed(key, item.topics, item.source, item.published, article);
  }

  /** `article`: itemKey of the article; an item without one is held out alone. */
  addKeyed(
    key: number,
    topics: readonly string[],
    source: string,
    published: string | null,
    article = key,
  ): boolean {
    if (this.position.has(key)) return false;
    this.position.set(key, this.keys.length);
    this.keys.push(key);
    this.article.push(article);
    for (const t of new Set(topics)) this.topicList.push(this.intern(t, this.categories, this.categoryIndex));
    this.topicStart.push(this.topicList.length);
    this.source.push(this.intern(source, this.sources, this.sourceIndex));
    this.published.push(published === null ? 0 : dateNumber(published));
    const withdrawn = this.withdrawnKeys.has(key);
    this.withdrawn.push(withdrawn ? 1 : 0);
    if (withdrawn) this.withdrawnHere++;
    return true;
  }

  topicsOf(i: number): string[] {
    const out: string[] = [];
    for (let j = this.topicStart[i]!; j < this.topicStart[i + 1]!; j++)
      out.push(this.categories[this.topicList[j]!]!);
    return out;
  }

  private intern(name: string, names: string[], index: Map<string, number>): number {
    let i = index.get(name);
    if (i === undefined) {
      i = names.length;
      names.push(name);
      index.set(name, i);
    }
    return i;
  }
}

export interface SelectionParams {
  readonly alpha: number;
  readonly seed: number;
  readonly repeatCap: number;
  /** Most selected copies; null for as many as the scarcest topic allows. */
  readonly maxSize: number | null;
  /** A reference category with fewer eligible items than this is starving and not served. */
  readonly minTopicItems: number;
  /** Reference counts by category (unknown categories left out). */
  readonly reference: Distribution;
  readonly heldOut: HeldOut;
  /** Factors on the α-target per topic (the reward policy's move), renormalised; none: 1. */
  readonly weights?: Distribution;
}

export interface Selection {
  readonly quotas: Record<string, TopicQuota>;
  readonly observed: Distribution;
  readonly target: Distribution;
  readonly starving: string[];
  /** Copies of each item of the index, by position. */
  readonly copies: Uint16Array;
  readonly metrics: Omit<MixState['metrics'], 'kept'>;
}

/** Scratch for one recompute: the index's columns resolved against the params. */
interface Frame {
  readonly n: number;
  readonly u: Float64Array;
  /** Item i's served topics are servedList[servedStart[i] .. servedStart[i + 1]). */
  readonly servedStart: Uint32Array;
  readonly servedList: Uint16Array;
  readonly eligible: Uint8Array;
  /** For each served topic (by index into `served`), its eligible items. */
  readonly members: Uint32Array[];
  readonly served: string[];
  readonly target: number[];
}

/** The training selection for the index under the params: quotas, the rule, the copies, the figures. */
export function computeSelection(index: ItemIndex, params: SelectionParams): Selection {
  const frame = frameOf(index, params);
  const { served, target, members } = frame;
  const available = members.map((m) => m.length);
  // The most label occurrences every served topic can fill at its share, each item at most
  // repeatCap times; a max size scales it down (the size in copies is found by filling).
  let labels =
    served.length === 0
      ? 0
      : Math.min(...served.map((_, c) => (params.repeatCap * available[c]!) / target[c]!));
  let best = fill(frame, labels, params.repeatCap);
  if (params.maxSize !== null) {
    for (let pass = 0; pass < 4 && best.size > params.maxSize; pass++) {
      labels *= params.maxSize / best.size;
      best = fill(frame, labels, params.repeatCap);
    }
  }
  return summarise(index, params, frame, best);
}

interface Filled {
  readonly copies: Uint16Array;
  readonly rules: { level: number; threshold: number; quota: number; damp: number }[];
  readonly size: number;
}

function frameOf(index: ItemIndex, params: SelectionParams): Frame {
  const n = index.size;
  const u = new Float64Array(n);
  const eligible = new Uint8Array(n);
  const heldTopics = new Set(params.heldOut.topics);
  const heldSources = new Set(params.heldOut.sources);
  const from = params.heldOut.publishedFrom === null ? null : dateNumber(params.heldOut.publishedFrom);
  const counts = new Array<number>(index.categories.length).fill(0);
  // Held out by article, as the feeder's pool and the exports hold out (heldOutArticles): every QA
  // of an article one of whose QA the rule matches, so the quotas and metrics.heldOut count what
  // training will never see.
  const heldArticles = new Set<number>();
  for (let i = 0; i < n; i++) {
    if (index.withdrawn[i]) continue;
    let held =
      heldSources.has(index.sources[index.source[i]!]!) || (from !== null && index.published[i]! >= from);
    for (let j = index.topicStart[i]!; !held && j < index.topicStart[i + 1]!; j++) {
      held = heldTopics.has(index.categories[index.topicList[j]!]!);
    }
    if (held) heldArticles.add(index.article[i]!);
  }
  for (let i = 0; i < n; i++) {
    u[i] = uniformOf(index.keys[i]!, params.seed);
    if (index.withdrawn[i] || heldArticles.has(index.article[i]!)) continue;
    eligible[i] = 1;
    for (let j = index.topicStart[i]!; j < index.topicStart[i + 1]!; j++) counts[index.topicList[j]!]!++;
  }
  const served = Object.keys(params.reference)
    .filter((c) => {
      const k = index.categories.indexOf(c);
      return params.reference[c]! > 0 && k >= 0 && counts[k]! >= Math.max(1, params.minTopicItems);
    })
    .sort();
  const smoothed = smoothedShares(
    Object.fromEntries(served.map((c) => [c, params.reference[c]!])),
    params.alpha,
  );
  const { weights } = params;
  const shares = weights
    ? normalise(Object.fromEntries(served.map((c) => [c, smoothed[c]! * (weights[c] ?? 1)])))
    : smoothed;
  const slot = new Map(served.map((c, s) => [index.categories.indexOf(c), s]));
  const members = served.map((c) => new Uint32Array(counts[index.categories.indexOf(c)]!));
  const filled = new Array<number>(served.length).fill(0);
  const servedStart = new Uint32Array(n + 1);
  const servedList: number[] = [];
  for (let i = 0; i < n; i++) {
    servedStart[i] = servedList.length;
    if (!eligible[i]) continue;
    for (let j = index.topicStart[i]!; j < index.topicStart[i + 1]!; j++) {
      const s = slot.get(index.topicList[j]!);
      if (s === undefined) continue;
      members[s]![filled[s]!++] = i;
      servedList.push(s);
    }
  }
  servedStart[n] = servedList.length;
  return {
    n,
    u,
    servedStart,
    servedList: Uint16Array.from(servedList),
    eligible,
    members,
    served,
    target: served.map((c) => shares[c]!),
  };
}

/**
 * Fills each served topic's quota of label occurrences, scarcest topic first, counting the copies
 * earlier topics gave to shared items. Shared items can overfill a topic (one that is a frequent
 * second label); the next pass lowers that topic's own quota and, once it takes nothing of its
 * own, damps how often its items are drawn by any topic. The pass closest to the target wins.
 */
function fill(frame: Frame, labels: number, repeatCap: number): Filled {
  const { served, target, members } = frame;
  const order = served
    .map((_, c) => c)
    .sort((a, b) => members[a]!.length / target[a]! - members[b]!.length / target[b]! || a - b);
  const want = target.map((p) => Math.round(labels * p));
  const quotas = [...want];
  const damp = served.map(() => 1);
  let best: Filled | null = null;
  let bestError = Number.POSITIVE_INFINITY;
  let stale = 0;
  for (let pass = 0; pass < 8; pass++) {
    const filled = fillOnce(frame, order, quotas, damp, repeatCap);
    const got = members.map((m) => labelsOf(m, filled.copies));
    const error = got.reduce((s, g, c) => s + Math.abs(g - want[c]!), 0);
    if (error < bestError) {
      best = filled;
      bestError = error;
      stale = 0;
    } else if (++stale === 2) {
      // Two passes that gain nothing: what is left is what the data allows (a topic whose
      // items are all taken and still short).
      break;
    }
    // Within a label per topic, or a fifth of a percent of the mix: closer changes no figure.
    if (error <= Math.max(served.length, 0.002 * labels)) break;
    got.forEach((g, c) => {
      const over = g - want[c]!;
      // A topic that took items of its own gives those up first; one that took none is
      // filled by others' shared items alone, and only damping its items helps.
      if (over > 0 && filled.rules[c]!.level > 0) quotas[c] = Math.max(0, quotas[c]! - over);
      else if (over > 0 || damp[c]! < 1) damp[c] = Math.min(1, (damp[c]! * want[c]!) / Math.max(1, g));
    });
  }
  return best!;
}

function fillOnce(
  frame: Frame,
  order: number[],
  quotas: number[],
  damp: number[],
  repeatCap: number,
): Filled {
  const { u, members, servedStart, servedList } = frame;
  const draw = new Float64Array(frame.n);
  for (let i = 0; i < frame.n; i++) {
    let d = 1;
    for (let j = servedStart[i]!; j < servedStart[i + 1]!; j++) d = Math.min(d, damp[servedList[j]!]!);
    draw[i] = u[i]! / d;
  }
  const copies = new Uint16Array(frame.n);
  const rules = quotas.map((quota, c) => ({ level: 0, threshold: 0, quota, damp: damp[c]! }));
  let scratch = new Float64Array(0);
  // Indexed loops over typed arrays throughout: this is the recompute's inner loop.
  for (const c of order) {
    const items = members[c]!;
    const m = items.length;
    let need = quotas[c]!;
    for (let k = 0; k < m; k++) need -= copies[items[k]!]!;
    for (let level = 1; need > 0 && level <= repeatCap; level++) {
      if (scratch.length < m) scratch = new Float64Array(m);
      let candidates = 0;
      for (let k = 0; k < m; k++) {
        const i = items[k]!;
        if (copies[i]! < level && draw[i]! < 1) scratch[candidates++] = draw[i]!;
      }
      if (need >= candidates) {
        for (let k = 0; k < m; k++) {
          const i = items[k]!;
          if (copies[i]! < level && draw[i]! < 1) copies[i] = level;
        }
        need -= candidates;
        rules[c] = { level, threshold: 1, quota: quotas[c]!, damp: damp[c]! };
        continue;
      }
      // Take the `need` candidates with the smallest draw: the cut-off is the next one's draw.
      const threshold = nthSmallest(scratch.subarray(0, candidates), need);
      for (let k = 0; k < m; k++) {
        const i = items[k]!;
        if (copies[i]! < level && draw[i]! < threshold) copies[i] = level;
      }
      rules[c] = { level, threshold, quota: quotas[c]!, damp: damp[c]! };
      need = 0;
    }
  }
  let size = 0;
  for (let i = 0; i < copies.length; i++) size += copies[i]!;
  return { copies, rules, size };
}

function summarise(index: ItemIndex, params: SelectionParams, frame: Frame, filled: Filled): Selection {
  const { served, target, members, eligible } = frame;
  const { copies } = filled;
  const observed: Distribution = {};
  const selectedLabels: Distribution = {};
  const labelsByCategory = new Array<number>(index.categories.length).fill(0);
  let items = 0;
  let unlabelled = 0;
  let distinct = 0;
  for (let i = 0; i < frame.n; i++) {
    if (!eligible[i]) continue;
    items++;
    if (index.topicStart[i] === index.topicStart[i + 1]) unlabelled++;
    if (copies[i]! > 0) distinct++;
    for (let j = index.topicStart[i]!; j < index.topicStart[i + 1]!; j++) {
      const c = index.topicList[j]!;
      observed[index.categories[c]!] = (observed[index.categories[c]!] ?? 0) + 1;
      labelsByCategory[c]! += copies[i]!;
    }
  }
  served.forEach((c, s) => {
    selectedLabels[c] = labelsOf(members[s]!, copies);
  });
  const targetShares = Object.fromEntries(served.map((c, s) => [c, target[s]!]));
  const referenceShares = smoothedShares(params.reference, 1);
  // The selection against the whole known reference (starving topics count as 0 there).
  const known = Object.fromEntries(
    Object.keys(params.reference).map((c) => {
      const k = index.categories.indexOf(c);
      return [c, k < 0 ? 0 : labelsByCategory[k]!];
    }),
  );
  const selected = normalise(selectedLabels);
  const quotas: Record<string, TopicQuota> = {};
  const referenceServed = smoothedShares(Object.fromEntries(served.map((c) => [c, params.reference[c]!])), 1);
  served.forEach((c, s) => {
    const rule = filled.rules[s]!;
    quotas[c] = {
      share: target[s]!,
      quota: rule.quota,
      upsample: target[s]! / referenceServed[c]!,
      level: rule.level,
      threshold: rule.threshold,
      damp: rule.damp,
    };
  });
  const nonZero = Object.values(selectedLabels).filter((v) => v > 0);
  const size = filled.size;
  return {
    quotas,
    observed,
    target: targetShares,
    starving: Object.keys(params.reference)
      .filter((c) => !served.includes(c))
      .sort(),
    copies,
    metrics: {
      items,
      heldOut: frame.n - index.withdrawnItems - items,
      unlabelled,
      size,
      distinct,
      maxMinRatio: nonZero.length ? Math.max(...nonZero) / Math.min(...nonZero) : 0,
      averageUpsample: served.length
        ? served.reduce((s, c) => s + quotas[c]!.upsample, 0) / served.length
        : 0,
      yield: items === 0 ? 0 : size / items,
      tvdReference: size === 0 ? 1 : tvd(normalise(known), referenceShares),
      tvdTarget: size === 0 ? 1 : tvd(selected, targetShares),
      jsTarget: size === 0 ? 1 : jensenShannon(selected, targetShares),
    },
  };
}

/** Label occurrences a topic's members hold: their copies summed. */
function labelsOf(members: Uint32Array, copies: Uint16Array): number {
  let sum = 0;
  for (let k = 0; k < members.length; k++) sum += copies[members[k]!]!;
  return sum;
}

/** The k-th smallest value (0-based) of xs, which it reorders: Hoare's selection, O(n) on average. */
export function nthSmallest(xs: Float64Array, k: number): number {
  let lo = 0;
  let hi = xs.length - 1;
  while (hi > lo) {
    // Median of three as the pivot keeps sorted and reversed input linear.
    const mid = (lo + hi) >>> 1;
    const a = xs[lo]!;
    const b = xs[mid]!;
    const c = xs[hi]!;
    const pivot = a < b ? (b < c ? b : Math.max(a, c)) : a < c ? a : Math.max(b, c);
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (xs[i]! < pivot) i++;
      while (xs[j]! > pivot) j--;
      if (i <= j) {
        const t = xs[i]!;
        xs[i] = xs[j]!;
        xs[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return xs[k]!;
  }
  return xs[k]!;
}

/** Total variation distance: half the L1 distance between two distributions over the union of keys. */
export function tvd(p: Distribution, q: Distribution): number {
  let sum = 0;
  for (const k of new Set([...Object.keys(p), ...Object.keys(q)])) sum += Math.abs((p[k] ?? 0) - (q[k] ?? 0));
  return Math.min(1, sum / 2);
}

/** Jensen-Shannon distance (square root of the divergence, base 2): 0 equal, 1 disjoint. */
export function jensenShannon(p: Distribution, q: Distribution): number {
  let divergence = 0;
  for (const k of new Set([...Object.keys(p), ...Object.keys(q)])) {
    const a = p[k] ?? 0;
    const b = q[k] ?? 0;
    const m = (a + b) / 2;
    if (a > 0) divergence += (a / 2) * Math.log2(a / m);
    if (b > 0) divergence += (b / 2) * Math.log2(b / m);
  }
  return Math.sqrt(Math.max(0, Math.min(1, divergence)));
}
