import type { Distribution } from './smoothing.js';

/** How well the model does on a topic: the mean reward trainers acked for its items. */
export interface TopicMastery {
  readonly category: string;
  readonly meanReward: number;
  readonly n: number;
}

export interface RewardPolicyConfig {
  /** A topic whose mean reward is at least this is mastered. */
  readonly mastered: number;
  /** Most total variation distance the moved target may be from the α-target. */
  readonly tvdBudget: number;
  /** Rewards a topic needs before its mean is trusted. */
  readonly minRewards: number;
}

export interface PolicyMove {
  /** Per-topic factors on the α-target (1 where nothing moved). */
  readonly weights: Distribution;
  /** Share of the target moved: the TVD between the moved target and the α-target. */
  readonly moved: number;
  readonly from: TopicMastery[];
  readonly to: TopicMastery[];
  readonly reason: string;
}

/**
 * Beyond the paper: moves up to `tvdBudget` of the α-target from topics the model has mastered to
 * the ones it has not, each losing in proportion to its share and each gaining in proportion to
 * its share times how far its mean reward is from 1 (the weakest gain most). Moving mass m from one
 * set of topics to a disjoint one is a total variation distance of exactly m, so the budget holds
 * by construction. Topics with too few rewards are left alone. Null when nothing can move.
 */
export function rewardPolicyMove(
  target: Distribution,
  mastery: readonly TopicMastery[],
  config: RewardPolicyConfig,
): PolicyMove | null {
  const known = mastery.filter((m) => m.n >= config.minRewards && (target[m.category] ?? 0) > 0);
  const from = known.filter((m) => m.meanReward >= config.mastered);
  const to = known.filter((m) => m.meanReward < config.mastered);
  if (from.length === 0 || to.length === 0 || config.tvdBudget <= 0) return null;
  const fromMass = from.reduce((s, m) => s + target[m.category]!, 0);
  const need = (m: TopicMastery) => target[m.category]! * (1 - Math.max(0, Math.min(1, m.meanReward)));
  const needMass = to.reduce((s, m) => s + need(m), 0);
  if (needMass === 0) return null;
  // Never take more than half of what the mastered topics hold: they stay in the mix.
  const moved = Math.min(config.tvdBudget, fromMass / 2);
  const weights: Distribution = {};
  for (const m of from) weights[m.category] = 1 - moved / fromMass;
  for (const m of to) weights[m.category] = 1 + (moved * need(m)) / needMass / target[m.category]!;
  const list = (ms: readonly TopicMastery[]) =>
    ms.map((m) => `${m.category} (${m.meanReward.toFixed(2)} over ${m.n})`).join(', ');
  return {
    weights,
    moved,
    from,
    to,
    reason: `reward policy: ${moved.toFixed(3)} of the α-target moved from mastered ${list(from)} to ${list(to)}`,
  };
}
