import { readFileSync } from 'node:fs';
import { z } from 'zod';

/**
 * A reference distribution: how often each taxonomy category occurs in the literature the mix
 * should follow. A category's count is null when the source does not publish it (never
 * invented); `share` is kept where only a percentage is published.
 */
export const Reference = z.object({
  name: z.string().min(1),
  description: z.string().default(''),
  total: z.number().int().positive().nullable().describe('articles counted; shares are of this total'),
  categories: z.record(
    z.string(),
    z.object({
      count: z.number().nonnegative().nullable(),
      share: z.number().min(0).max(1).nullable().default(null).describe('published share when no count is'),
    }),
  ),
});
export type Reference = z.infer<typeof Reference>;

export const DEFAULT_REFERENCE_PATH = new URL('./reference/pubmed-biology-2020-2024.json', import.meta.url);

export function loadReference(path: string | URL = DEFAULT_REFERENCE_PATH): Reference {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new Error(`reference ${String(path)}: ${(e as Error).message}`);
  }
  const parsed = Reference.safeParse(raw);
  if (!parsed.success) throw new Error(`reference ${String(path)}: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/**
 * The counts the smoothing can use: published counts, and counts implied by a published share of
 * a known total. Categories with neither are unknown.
 */
export function knownCounts(ref: Reference): { counts: Record<string, number>; unknown: string[] } {
  const counts: Record<string, number> = {};
  const unknown: string[] = [];
  for (const [id, c] of Object.entries(ref.categories)) {
    if (c.count !== null) counts[id] = c.count;
    else if (c.share !== null && ref.total !== null) counts[id] = c.share * ref.total;
    else unknown.push(id);
  }
  return { counts, unknown: unknown.sort() };
}
