import type { SamplerConfig } from '../../schemas/config.js';
import type { MixState } from '../../schemas/mix-state.js';
import { knownCounts, type Reference } from '../../schemas/reference.js';
import type { PolicyMove } from './reward-policy.js';
import type { Selection, SelectionParams } from './selection.js';

/** The selection's parameters from the config and the reference's known counts. */
export function selectionParams(
  config: SamplerConfig,
  reference: Reference,
  alpha = config.alpha,
): SelectionParams {
  return {
    alpha,
    seed: config.seed,
    repeatCap: config.repeatCap,
    maxSize: config.maxSize,
    minTopicItems: config.minTopicItems,
    reference: knownCounts(reference).counts,
    heldOut: config.heldOut,
  };
}

/** Share of the items selected before that are still selected (by index position: items only append). */
export function keptShare(previous: Uint16Array | null, current: Uint16Array): number | null {
  if (!previous) return null;
  let was = 0;
  let still = 0;
  for (let i = 0; i < previous.length; i++) {
    if (previous[i]! === 0) continue;
    was++;
    if (current[i]! > 0) still++;
  }
  return was === 0 ? null : still / was;
}

/** A mix version: the selection's rule and figures, with what it was computed from and why. */
export function mixStateOf(args: {
  readonly selection: Selection;
  readonly params: SelectionParams;
  readonly reference: Reference;
  readonly taxonomy: MixState['taxonomy'];
  readonly version: number;
  readonly at: Date;
  readonly reason: string;
  readonly kept: number | null;
  readonly policy?: PolicyMove | null;
}): MixState {
  const { selection, params } = args;
  return {
    version: args.version,
    at: args.at.toISOString(),
    reason: args.reason,
    alpha: params.alpha,
    seed: params.seed,
    repeatCap: params.repeatCap,
    taxonomy: args.taxonomy,
    reference: {
      name: args.reference.name,
      counts: params.reference,
      unknown: knownCounts(args.reference).unknown,
    },
    heldOut: params.heldOut,
    observed: selection.observed,
    target: selection.target,
    quotas: selection.quotas,
    starving: selection.starving,
    policy: args.policy
      ? { moved: args.policy.moved, from: [...args.policy.from], to: [...args.policy.to] }
      : null,
    metrics: { ...selection.metrics, kept: args.kept },
  };
}
