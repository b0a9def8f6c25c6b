import { z } from 'zod';
import { DeadLetter, type DeadLetterCode, deadLetterCodeOf } from '../../schemas/dead-letter.js';
import { contentHash } from '../../schemas/ids.js';
import { type SourceItem, truncatePayload } from '../items.js';
import { readXml, type XmlFormat } from '../xml-reader.js';
import type { HttpResponse } from './http.js';

/** What was wrong with a response, before anyone decides whether it is a dead letter yet. */
export interface Problem {
  /** Without secret parameters. */
  url: string;
  /** Without one, the code the reason implies (deadLetterCodeOf). */
  code?: DeadLetterCode;
  reason: string;
  payload: string;
}

/** A dead letter for something an API returned; `url` never carries secret parameters. */
export function apiDeadLetter(problem: Problem, processor: string): SourceItem {
  const dl: DeadLetter = {
    // Where and why, not the payload: the same failure seen again gets the same id.
    id: contentHash('dead-letter', processor, problem.url, problem.reason),
    code: problem.code ?? deadLetterCodeOf(problem.reason),
    reason: problem.reason,
    processor,
    origin: { kind: 'api', url: problem.url },
    payload: truncatePayload(problem.payload),
  };
  return { kind: 'dead-letter', deadLetter: DeadLetter.parse(dl) };
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: Problem };

/** A JSON body checked against the shape we rely on: anything else is a Problem, never a crash. */
export function parseJson<T>(res: HttpResponse, schema: z.ZodType<T>): Parsed<T> {
  const text = res.body.toString('utf8');
  // bioRxiv's outage shape: 200 with nothing in it.
  if (text.trim() === '')
    return { ok: false, problem: { url: res.url, reason: `empty body (HTTP ${res.status})`, payload: '' } };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return {
      ok: false,
      problem: { url: res.url, reason: `malformed JSON: ${(e as Error).message}`, payload: text },
    };
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return { ok: true, value: parsed.data };
  const reason = `unexpected JSON: ${z.prettifyError(parsed.error)}`;
  return { ok: false, problem: { url: res.url, reason, payload: text } };
}

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

/**
 * An XML body through the existing streaming reader, with its file-origin dead letters
 * re-addressed to the URL. A record the reader refused stays a dead letter among the items; a
 * fault of the body itself (malformed XML, not the expected root) is returned as `fault`, so the
 * caller can treat the page as unreadable rather than as short.
 */
export async function readXmlBody(
  res: HttpResponse,
  format: XmlFormat,
): Promise<{ items: SourceItem[]; fault: Problem | null }> {
  const items: SourceItem[] = [];
  let fault: Problem | null = null;
  for await (const item of readXml(once(res.body), format, { path: res.url })) {
    if (item.kind === 'article') {
      items.push(item);
      continue;
    }
    const { code, reason, payload, origin } = item.deadLetter;
    const position = origin.kind === 'file' ? origin.position : null;
    const problem = { url: res.url, code, reason: position ? `${reason} (${position})` : reason, payload };
    // xml-reader positions a refused record as 'record N, line L'; body faults say 'after record N'.
    if (position?.startsWith('record ')) items.push(apiDeadLetter(problem, format.processor));
    else fault ??= problem;
  }
  return { items, fault };
}
