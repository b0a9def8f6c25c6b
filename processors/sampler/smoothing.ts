/** Counts or shares by category. */
export type Distribution = Record<string, number>;

/** Shares summing to 1 (all zero stays all zero). */
export function normalise(d: Distribution): Distribution {
  const total = Object.values(d).reduce((s, v) => s + v, 0);
  return Object.fromEntries(Object.entries(d).map(([k, v]) => [k, total === 0 ? 0 : v / total]));
}

/** The method's exponential smoothing: p_c(α) = n_c^α / Σ n^α. α = 1 keeps the distribution, α = 0 is uniform. */
export function smoothedShares(counts: Distribution, alpha: number): Distribution {
  return normalise(Object.fromEntries(Object.entries(counts).map(([k, n]) => [k, n > 0 ? n ** alpha : 0])));
}
