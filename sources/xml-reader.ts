import { type ByteSource, byteChunks } from './bytes.js';
import { textChunks } from './decode.js';
import {
  DEFAULT_MAX_BYTES,
  deadLetter,
  finishedItem,
  labelOf,
  reasonOf,
  SourceError,
  type SourceItem,
} from './items.js';
import { type ArticleDraft, finishArticle } from './normalise.js';
import { elementPath, faultElement, first, rawText, toXml, type XmlElement, xmlRecords } from './xml.js';

export interface XmlReaderOptions {
  /** The file name dead letters and articles cite; defaults to the path, or '<stream>'. */
  path?: string;
  /** A record longer than this (characters, ~bytes) becomes a dead letter; default 50 MB. */
  maxRecordBytes?: number;
}

/** What a format knows: which elements are its records and how one becomes an article (null: not an article, skip). */
export interface XmlFormat {
  readonly processor: string;
  /**
   * The element names that are records, found wherever they sit: at the root, under a set
   * element, or under any wrapper around the set. A file with none of them is one dead letter.
   */
  readonly recordsAt: ReadonlySet<string>;
  readonly toDraft: (record: XmlElement, sourceUri: string) => ArticleDraft | null;
  /** How a fault names a record ('PMID 123', 'doi 10.1/x'); default: the first PMID or article-id in it. */
  readonly recordLabel?: (record: XmlElement) => string | null;
}

const errorText = (e: unknown) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e));

/** A record's name in a fault when its format does not say: a PMID (MEDLINE) or an article-id (JATS). */
function defaultRecordLabel(record: XmlElement): string | null {
  const pmid =
    first(record, 'PMID') ?? first(record, 'MedlineCitation/PMID') ?? first(record, 'BookDocument/PMID');
  if (pmid && rawText(pmid).trim()) return `PMID ${rawText(pmid).trim()}`;
  const id = first(record, 'front/article-meta/article-id');
  if (id && rawText(id).trim()) return `${id.attrs['pub-id-type'] ?? 'id'} ${rawText(id).trim()}`;
  return null;
}

/**
 * The reason for a fault a reader did not foresee (a bug, not bad input): which record, which
 * element in it (from the walker that was there when it threw) and what was thrown.
 */
export function recordFaultReason(
  format: Pick<XmlFormat, 'recordLabel'>,
  record: XmlElement,
  position: string,
  e: unknown,
): string {
  let label: string | null = null;
  try {
    label = (format.recordLabel ?? defaultRecordLabel)(record);
  } catch {
    // Naming the record must not hide the fault itself.
  }
  const at = faultElement(e);
  const path = (at && elementPath(record, at)) ?? record.name;
  return `reader fault in ${label ? `${label}, ` : ''}${position}, at ${path}: ${errorText(e)}`;
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
  let root: string | null = null;
  let lastRecord = 0;
  try {
    const text = textChunks(byteChunks(src), { xml: true });
    const events = xmlRecords(text, {
      records: format.recordsAt,
      maxRecordChars: opts.maxRecordBytes ?? DEFAULT_MAX_BYTES,
    });
    for await (const ev of events) {
      if (ev.kind === 'root') {
        root = ev.name;
        continue;
      }
      lastRecord = ev.index;
      const position = `record ${ev.index}, line ${ev.line}`;
      if (ev.kind === 'oversize') {
        const reason = `record over the size limit: ${ev.chars} characters in <${ev.name}>`;
        yield deadLetter({ path, position, code: 'too-large', reason, processor });
        continue;
      }
      let done: ReturnType<typeof finishArticle> | null;
      try {
        const draft: ArticleDraft | null = format.toDraft(ev.element, path);
        done = draft === null ? null : finishArticle(draft);
      } catch (e) {
        // Bad input a format recognised says so itself; anything else names the record and the element.
        const { code, reason } =
          e instanceof SourceError
            ? e
            : { code: 'reader-fault' as const, reason: recordFaultReason(format, ev.element, position, e) };
        yield deadLetter({ path, position, code, reason, processor, payload: toXml(ev.element) });
        continue;
      }
      if (done !== null) yield finishedItem(done, { path, position, processor, payload: toXml(ev.element) });
    }
    if (root === null)
      yield deadLetter({ path, position: null, code: 'empty-file', reason: 'empty file', processor });
    else if (lastRecord === 0) {
      const names = [...format.recordsAt].map((n) => `<${n}>`).join(', ');
      const reason = `no record element (${names}) under the root <${root}>`;
      yield deadLetter({ path, position: null, code: 'malformed', reason, processor });
    }
  } catch (e) {
    const after = lastRecord ? `after record ${lastRecord}` : 'before the first record';
    const { code, reason, position, payload } =
      e instanceof SourceError
        ? reasonOf(e)
        : {
            code: 'reader-fault' as const,
            reason: `reader fault ${after}: ${errorText(e)}`,
            position: null,
            payload: '',
          };
    yield deadLetter({
      path,
      position: position ? `${position} (${after})` : after,
      code,
      reason,
      processor,
      payload,
    });
  }
}
