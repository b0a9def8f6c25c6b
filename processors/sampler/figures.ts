import type { Reference } from '../../schemas/reference.js';
import { knownCounts } from '../../schemas/reference.js';
import { type Selection, tvd } from './selection.js';
import { type Distribution, normalise, smoothedShares } from './smoothing.js';

/** One row of the paper's Table 13: a category's reference count, share, smoothed share and upsample. */
export interface ReferenceRow {
  readonly rank: number;
  readonly category: string;
  readonly count: number;
  /** The count is the published share times the total, not a published count. */
  readonly fromShare: boolean;
  /** Share of the reference's total (or of the known categories when no total is given). */
  readonly share: number;
  /** p_c(α). */
  readonly smoothed: number;
  /** p_c(α) / p_c(1). */
  readonly upsample: number;
}

export interface ReferenceFigures {
  readonly alpha: number;
  readonly rows: ReferenceRow[];
  /** Categories without a published count: not in the rows, never estimated. */
  readonly unknown: string[];
  /**
   * True when shares at this α are of the known categories only: Σ n^α over all categories needs
   * the unknown counts, except at α = 1 where it is the reference's total. Ratios between rows
   * are exact either way.
   */
  readonly partial: boolean;
  /** Largest over smallest smoothed share. */
  readonly maxMinRatio: number;
  /** p_c(α) / p_c(1) averaged over the known categories. */
  readonly averageUpsample: number;
}

/** The paper's Table 13 for any α, from the reference alone. */
export function referenceFigures(ref: Reference, alpha: number): ReferenceFigures {
  const { counts, unknown } = knownCounts(ref);
  const known = Object.values(counts).reduce((s, n) => s + n, 0);
  const ofTotal = (n: number) => n / (ref.total ?? known);
  // At α = 1 the normaliser Σ n is the total, known even when some counts are not.
  const exact = alpha === 1 && ref.total !== null;
  const smoothed = exact
    ? Object.fromEntries(Object.entries(counts).map(([c, n]) => [c, ofTotal(n)]))
    : smoothedShares(counts, alpha);
  const base = exact ? smoothed : smoothedShares(counts, 1);
  const rows = Object.entries(counts)
    .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
    .map(([category, count], i) => ({
      rank: i + 1,
      category,
      count,
      fromShare: ref.categories[category]?.count === null,
      share: ofTotal(count),
      smoothed: smoothed[category]!,
      upsample: base[category]! === 0 ? 0 : smoothed[category]! / base[category]!,
    }));
  const positive = rows.map((r) => r.smoothed).filter((s) => s > 0);
  return {
    alpha,
    rows,
    unknown,
    partial: unknown.length > 0 && !exact,
    maxMinRatio: positive.length ? Math.max(...positive) / Math.min(...positive) : 0,
    averageUpsample: rows.length ? rows.reduce((s, r) => s + r.upsample, 0) / rows.length : 0,
  };
}

/** One row of the paper's Table 5: a dataset (the full data, or a mix) against the reference. */
export interface DatasetRow {
  readonly dataset: string;
  readonly size: number;
  readonly maxMinRatio: number;
  readonly averageUpsample: number;
  readonly yield: number;
  readonly tvdReference: number;
}

/** Table 5's "full" row: every eligible item, as it is. */
export function fullDatasetRow(observed: Distribution, items: number, reference: Distribution): DatasetRow {
  const served = Object.keys(reference).filter((c) => (observed[c] ?? 0) > 0 && reference[c]! > 0);
  const obs = normalise(Object.fromEntries(served.map((c) => [c, observed[c]!])));
  const ref = normalise(Object.fromEntries(served.map((c) => [c, reference[c]!])));
  const counts = served.map((c) => observed[c]!);
  return {
    dataset: 'full',
    size: items,
    maxMinRatio: counts.length ? Math.max(...counts) / Math.min(...counts) : 0,
    averageUpsample: served.length ? served.reduce((s, c) => s + obs[c]! / ref[c]!, 0) / served.length : 0,
    yield: items === 0 ? 0 : 1,
    tvdReference: tvd(
      normalise(Object.fromEntries(Object.keys(reference).map((c) => [c, observed[c] ?? 0]))),
      normalise(reference),
    ),
  };
}

/** Table 5's row for a mix. */
export function mixDatasetRow(selection: Selection, alpha: number): DatasetRow {
  const m = selection.metrics;
  return {
    dataset: `α = ${alpha}`,
    size: m.size,
    maxMinRatio: m.maxMinRatio,
    averageUpsample: m.averageUpsample,
    yield: m.yield,
    tvdReference: m.tvdReference,
  };
}
