import type { z } from 'zod';
import { contentHash } from '../../schemas/ids.js';

/**
 * Cursors are JSON the lead stores verbatim. One a poller cannot read (another poller's, an
 * older version) is a configuration fault, not bad input: it throws rather than silently
 * starting over, which would re-ingest everything since `since`.
 */
export function decodeCursor<T>(name: string, schema: z.ZodType<T>, raw: string): T {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new Error(`${name}: cursor is not JSON: ${raw.slice(0, 200)}`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success)
    throw new Error(`${name}: unreadable cursor ${raw.slice(0, 200)}: ${parsed.error.message}`);
  return parsed.data;
}

/** Keys in a fixed order, so the same position always persists as the same string. */
export const encodeCursor = (value: object): string => JSON.stringify(value);

/**
 * A short fingerprint of what a window's results depend on (query, category): a cursor made for
 * another query must not be resumed inside this one's result list.
 */
export const queryKey = (...parts: string[]) => contentHash('poller-query', ...parts).slice(0, 12);
