import { createHash } from 'node:crypto';

/**
 * JSON with object keys sorted, so equal values hash equally whatever order they were built in.
 */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/** The response journal's key: a hash of everything that determines a reply. */
export function requestKey(parts: {
  provider: string;
  model: string;
  promptVersion: string;
  params: Record<string, unknown>;
  messages: unknown;
}): string {
  return createHash('sha256').update(canonical(parts)).digest('hex');
}
