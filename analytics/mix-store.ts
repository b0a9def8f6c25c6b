import { z } from 'zod';
import { MixState } from '../schemas/mix-state.js';
import type { Analytics } from './clickhouse.js';

/** Records mix versions; a version written again (a replayed sampler step) replaces itself. */
export async function insertMixVersions(a: Analytics, mixes: readonly MixState[]): Promise<void> {
  if (mixes.length === 0) return;
  await a.client.insert({
    table: 'mix_history',
    values: mixes.map((m) => ({
      version: m.version,
      at: Math.floor(Date.parse(m.at) / 1000),
      reason: m.reason,
      alpha: m.alpha,
      items: m.metrics.items,
      held_out: m.metrics.heldOut,
      size: m.metrics.size,
      distinct_items: m.metrics.distinct,
      max_min_ratio: m.metrics.maxMinRatio,
      average_upsample: m.metrics.averageUpsample,
      yield: m.metrics.yield,
      tvd_reference: m.metrics.tvdReference,
      tvd_target: m.metrics.tvdTarget,
      js_target: m.metrics.jsTarget,
      kept: m.metrics.kept ?? -1,
      state: JSON.stringify(m),
    })),
    format: 'JSONEachRow',
  });
}

const StateRow = z.object({ state: z.string() });

/** Mix versions, oldest first; `last` keeps only the most recent ones. */
export async function mixHistory(a: Analytics, last?: number): Promise<MixState[]> {
  const limit = last === undefined ? '' : `ORDER BY version DESC LIMIT ${Math.max(0, Math.floor(last))}`;
  const rs = await a.client.query({
    query: `SELECT state FROM (SELECT version, state FROM mix_history FINAL ${limit}) ORDER BY version`,
    format: 'JSONEachRow',
  });
  return z
    .array(StateRow)
    .parse(await rs.json())
    .map((r) => MixState.parse(JSON.parse(r.state)));
}
