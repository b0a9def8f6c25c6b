import type { SourceItem } from '../items.js';
import { JATS } from '../jats.js';
import type { ArticleDraft } from '../normalise.js';
import { apiDeadLetter, readXmlBody } from './api-items.js';
import { HttpError, type PoliteHttp } from './http.js';
import type { HttpCall } from './types.js';

/**
 * A full text in JATS, read by the existing JATS reader, with `patch` applied to the draft (the
 * listing knows the source name, ids and licence better than some XML does). `article` is null
 * when there is no full text (404) or it yields none; then the caller falls back to the abstract
 * and emits `deadLetters`, which say why a full text that exists could not be used.
 */
export async function fetchFullText(
  http: PoliteHttp,
  url: URL,
  opts: HttpCall & {
    minIntervalMs: number;
    processor: string;
    patch: (draft: ArticleDraft) => ArticleDraft;
  },
): Promise<{ article: SourceItem | null; deadLetters: SourceItem[] }> {
  const { processor, patch, ...get } = opts;
  let res: Awaited<ReturnType<PoliteHttp['get']>>;
  try {
    res = await http.get(url, { ...get, accept: 'application/xml' });
  } catch (e) {
    // Listings say a text exists before it is served; a 404 is that lag, not a fault.
    if (e instanceof HttpError && e.status === 404) return { article: null, deadLetters: [] };
    throw e;
  }
  const { items, fault } = await readXmlBody(res, {
    processor,
    recordsAt: JATS.recordsAt,
    toDraft: (record, uri) => {
      const draft = JATS.toDraft(record, uri);
      return draft && patch(draft);
    },
  });
  const article = items.find((i) => i.kind === 'article') ?? null;
  if (article) return { article, deadLetters: [] };
  const deadLetters = items.map((i) =>
    i.kind === 'dead-letter'
      ? apiDeadLetter(
          {
            url: res.url,
            code: i.deadLetter.code,
            reason: `full text: ${i.deadLetter.reason}`,
            payload: i.deadLetter.payload,
          },
          processor,
        )
      : i,
  );
  if (fault) deadLetters.push(apiDeadLetter({ ...fault, reason: `full text: ${fault.reason}` }, processor));
  return { article: null, deadLetters };
}
