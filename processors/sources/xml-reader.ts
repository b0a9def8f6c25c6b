import { type ByteSource, byteChunks } from './bytes.js';
import { textChunks } from './decode.js';
import { articleItem, DEFAULT_MAX_BYTES, deadLetter, labelOf, reasonOf, type SourceItem } from './items.js';
import { type ArticleDraft, finishArticle } from './normalise.js';
import { toXml, type XmlElement, xmlRecords } from './xml.js';

export interface XmlReaderOptions {
  /** The file name dead letters and articles cite; defaults to the path, or '<stream>'. */
  path?: string;
  /** A record longer than this (characters, ~bytes) becomes a dead letter; default 50 MB. */
  maxRecordBytes?: number;
}

/** What a format knows: where its records are and how one becomes an article (null: not an article, skip). */
export interface XmlFormat {
  readonly processor: string;
  readonly recordsAt: (rootName: string) => 'root' | 'children';
  readonly toDraft: (record: XmlElement, sourceUri: string) => ArticleDraft | null;
}

/**
 * The loop both XML readers share: stream records, turn each into an article or a dead letter,
 * and turn any fault of the file (malformed XML, bad bytes, truncated gzip) into one last dead
 * letter after the records before it. Never throws.
 */
export async function* readXml(
  src: ByteSource,
  format: XmlFormat,
  opts: XmlReaderOptions = {},
): AsyncGenerator<SourceItem> {
  const path = labelOf(src, opts.path);
  const processor = format.processor;
  let sawRoot = false;
  let lastRecord = 0;
  try {
    const text = textChunks(byteChunks(src), { xml: true });
    const events = xmlRecords(text, {
      recordsAt: format.recordsAt,
      maxRecordChars: opts.maxRecordBytes ?? DEFAULT_MAX_BYTES,
    });
    for await (const ev of events) {
      if (ev.kind === 'root') {
        sawRoot = true;
        continue;
      }
      lastRecord = ev.index;
      const position = `record ${ev.index}, line ${ev.line}`;
      if (ev.kind === 'oversize') {
        const reason = `record over the size limit: ${ev.chars} characters in <${ev.name}>`;
        yield deadLetter({ path, position, reason, processor });
        continue;
      }
      let draft: ArticleDraft | null;
      try {
        draft = format.toDraft(ev.element, path);
      } catch (e) {
        yield deadLetter({
          path,
          position,
          reason: reasonOf(e).reason,
          processor,
          payload: toXml(ev.element),
        });
        continue;
      }
      if (draft === null) continue;
      const done = finishArticle(draft);
      if (done.ok) yield articleItem(done.article, position);
      else yield deadLetter({ path, position, reason: done.reason, processor, payload: toXml(ev.element) });
    }
    if (!sawRoot) yield deadLetter({ path, position: null, reason: 'empty file', processor });
  } catch (e) {
    const { reason, position, payload } = reasonOf(e);
    const after = lastRecord ? `after record ${lastRecord}` : 'before the first record';
    yield deadLetter({
      path,
      position: position ? `${position} (${after})` : after,
      reason,
      processor,
      payload,
    });
  }
}
