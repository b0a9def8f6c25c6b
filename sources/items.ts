import type { Article } from '../schemas/article.js';
import { DeadLetter, type DeadLetterCode, truncatePayload } from '../schemas/dead-letter.js';
import { contentHash } from '../schemas/ids.js';
import type { Finished } from './normalise.js';

/** What every reader yields: an article, or the reason something in the input could not become one. */
export type SourceItem =
  | { kind: 'article'; article: Article; position: string | null }
  | { kind: 'dead-letter'; deadLetter: DeadLetter };

export { MAX_PAYLOAD_BYTES, truncatePayload } from '../schemas/dead-letter.js';

/** Size limit for whatever is held whole: a text/Markdown/PDF file, one XML record, one JSONL line. */
export const DEFAULT_MAX_BYTES = 50 * 1024 * 1024;

/** The file name dead letters and articles cite: the path given, else the path read, else '<stream>'. */
export const labelOf = (src: string | AsyncIterable<Uint8Array>, path?: string) =>
  path ?? (typeof src === 'string' ? src : '<stream>');

/**
 * A problem with the input itself (not a bug): readers throw it from deep inside a stream and the
 * layer that knows the file turns it into exactly one dead letter.
 */
export class SourceError extends Error {
  constructor(
    readonly code: DeadLetterCode,
    readonly reason: string,
    readonly position: string | null = null,
    readonly payload = '',
  ) {
    super(position ? `${reason} (${position})` : reason);
    this.name = 'SourceError';
  }
}

/** Joins position parts from the outer layer (record, line) to the inner one (byte). */
export function joinPosition(...parts: (string | null | undefined)[]): string | null {
  const kept = parts.filter((p): p is string => !!p);
  return kept.length ? kept.join(', ') : null;
}

/** A reader's dead letter: its code (what it is grouped by) and its reason in words. */
export function deadLetter(opts: {
  path: string;
  position: string | null;
  code: DeadLetterCode;
  reason: string;
  processor: string;
  payload?: string;
}): SourceItem {
  const dl: DeadLetter = {
    // Where and why, not the payload: the same failure replayed gets the same id.
    id: contentHash('dead-letter', opts.processor, opts.path, opts.position, opts.reason),
    code: opts.code,
    reason: opts.reason,
    processor: opts.processor,
    origin: { kind: 'file', path: opts.path, position: opts.position },
    payload: truncatePayload(opts.payload ?? ''),
  };
  return { kind: 'dead-letter', deadLetter: DeadLetter.parse(dl) };
}

export function articleItem(article: Article, position: string | null): SourceItem {
  return { kind: 'article', article, position };
}

/** A file reader's item for a finished draft: its article, or a dead letter with finishArticle's code and reason. */
export function finishedItem(
  done: Finished,
  where: { path: string; position: string | null; processor: string; payload?: string },
): SourceItem {
  return done.ok
    ? articleItem(done.article, where.position)
    : deadLetter({ ...where, code: done.code, reason: done.reason });
}

/**
 * Anything thrown while reading, as the reason a dead letter gives: a SourceError's own reason;
 * anything else (a bug, not bad input) as 'reader fault: <error name>: <message>', code
 * reader-fault. Readers that know more (which record, which element) say so before it; see
 * xml-reader's recordFaultReason.
 */
export function reasonOf(e: unknown): {
  code: DeadLetterCode;
  reason: string;
  position: string | null;
  payload: string;
} {
  if (e instanceof SourceError)
    return { code: e.code, reason: e.reason, position: e.position, payload: e.payload };
  const what = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  return { code: 'reader-fault', reason: `reader fault: ${what}`, position: null, payload: '' };
}
