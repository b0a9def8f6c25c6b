/** Article ingestion: readers, normalisation, passages and dedup, with no dependency on the runtime. */
export { type ByteSource, byteChunks } from './bytes.js';
export { dedupKey, dedupKeys, mergeArticles, sameArticle } from './dedup.js';
export { DEFAULT_MAX_BYTES, MAX_PAYLOAD_BYTES, SourceError, type SourceItem } from './items.js';
export { JATS_PROCESSOR, jatsToDraft, readJats } from './jats.js';
export { JSONL_PROCESSOR, type JsonlOptions, jsonToDraft, readJsonl } from './jsonl.js';
export {
  GENERIC,
  JSONL_PRESETS,
  JsonlMapping,
  type JsonlMappingChoice,
  type JsonlMappingInput,
  type JsonlPreset,
  resolveMapping,
  S2ORC,
} from './jsonl-mapping.js';
export { MEDLINE_PROCESSOR, medlineToDraft, readMedline } from './medline.js';
export {
  type ArticleDraft,
  articleContentHash,
  cleanInline,
  cleanText,
  type Finished,
  finishArticle,
  parseDate,
  partialDate,
  stripMarkup,
} from './normalise.js';
export { approxTokens, type PassageOptions, passagesOf, sectionText, splitText } from './passages.js';
export { PDF_PROCESSOR, pdfToDraft, readPdf } from './pdf.js';
export { detectFormat, isReadable, type ReadOptions, readPath, type SourceFormat } from './read.js';
export { markdownToDraft, plainTextToDraft, readText, TEXT_PROCESSOR } from './text.js';
export type { XmlReaderOptions } from './xml-reader.js';
