import { z } from 'zod';

/**
 * Why an input was dropped, from a closed list: what dashboards, alerts and the run summary group
 * by. The reason beside it says the particulars (which field, which passage, which byte).
 */
export const DeadLetterCode = z.enum([
  // Any processor (the engine):
  'invalid-input', // a record its topic's schema refuses, not JSON, or a frame the registry cannot read
  'processor-failed', // the processor threw on this input every attempt
  // Readers (sources/*) and pollers (pollers/*):
  'empty-file',
  'too-large', // a file, record, line or passage over its size limit
  'bad-encoding', // invalid UTF-8, an unsupported or invalid charset
  'malformed', // not well-formed XML, JSON or PDF, or not the record shape the format has
  'refused-xml', // a DOCTYPE or entity the XML reader refuses to expand
  'encrypted', // a PDF that needs a password
  'unknown-format',
  'cannot-read', // the file system refused (removed mid-walk, no permission)
  'no-text', // an article, record or passage without text
  'invalid-article', // a record that normalises to no valid article
  'reader-fault', // a bug in a reader, not bad input
  'api-error', // an API answered with an error or an incomplete listing
  // Extract:
  'not-english',
  'no-question', // no passage of the article gave a question
  'question-unusable', // a generated question the record schema refuses
  // The LLM stages (extract, grade, classify):
  'llm-reply-invalid', // the reply would not validate, even after a repair request
  'llm-request-refused', // the endpoint refused the request for good
  // Classify:
  'label-unknown', // a label outside the taxonomy
  // Read only from old logs:
  'duplicate', // grade's repeat of a graded candidate (now a rejection, not a dead letter)
  'unclassified', // an old dead letter whose reason names no code
]);
export type DeadLetterCode = z.infer<typeof DeadLetterCode>;

/**
 * The code of a dead letter written before dead letters had one, derived from its reason: the
 * reasons were fixed texts, so a pattern each is enough. Anything unknown is 'unclassified'.
 */
export function deadLetterCodeOf(reason: string): DeadLetterCode {
  const r = reason.toLowerCase();
  const rules: [RegExp, DeadLetterCode][] = [
    [/^invalid input: /, 'invalid-input'],
    [/processor failed \d+ times/, 'processor-failed'],
    [/duplicate candidate/, 'duplicate'],
    [/not in english/, 'not-english'],
    [/no passage gave a question/, 'no-question'],
    [/question not usable/, 'question-unusable'],
    [/unusable reply|not valid json|does not match the schema/, 'llm-reply-invalid'],
    [/labels not in /, 'label-unknown'],
    [/^empty file$/, 'empty-file'],
    [/over the size limit|characters, over \d+/, 'too-large'],
    [/invalid utf-8|unsupported encoding|^invalid [\w-]+(: input ends|$)/, 'bad-encoding'],
    [/refused xml/, 'refused-xml'],
    [/encrypted pdf/, 'encrypted'],
    [/^cannot read: /, 'cannot-read'],
    [/reader fault/, 'reader-fault'],
    [/no text|empty passage/, 'no-text'],
    [/invalid article/, 'invalid-article'],
    [/unknown file type|neither jats nor pubmed/, 'unknown-format'],
    [/api status|has \d+ matches but esearch lists|http \d{3}/, 'api-error'],
    [
      /malformed|not a json object|unexpected (json|record|result|<)|no record element|without medlinecitation/,
      'malformed',
    ],
  ];
  return rules.find(([pattern]) => pattern.test(r))?.[1] ?? 'unclassified';
}

/** A dead letter as every writer makes it. */
const DeadLetterFields = z.object({
  id: z.string().min(1).describe('contentHash of where the input was and why it failed'),
  code: DeadLetterCode,
  reason: z.string().min(1).describe('what happened, in words, with the particulars'),
  processor: z.string().nullable().describe('processor or reader that refused the input'),
  origin: z.union([
    z.object({
      kind: z.literal('record'),
      topic: z.string(),
      partition: z.number().int(),
      offset: z.string().describe('decimal offset, a string so Kafka int64 offsets fit'),
    }),
    z.object({
      kind: z.literal('file'),
      path: z.string(),
      position: z.string().nullable().describe('line, byte or record index inside the file'),
    }),
    z.object({ kind: z.literal('api'), url: z.string() }),
  ]),
  payload: z.string().describe('the refused input, truncated to 64 KiB'),
});

/**
 * Every dropped input becomes one of these: nothing is dropped silently. Read from a log, a dead
 * letter written before codes existed gets the code its reason implies (deadLetterCodeOf).
 */
export const DeadLetter = DeadLetterFields.extend({
  code: DeadLetterCode.optional().describe('absent only on dead letters written before codes existed'),
}).transform(
  (dl): z.infer<typeof DeadLetterFields> => ({ ...dl, code: dl.code ?? deadLetterCodeOf(dl.reason) }),
);
export type DeadLetter = z.infer<typeof DeadLetter>;

export const MAX_PAYLOAD_BYTES = 64 * 1024;

/** Cuts a payload to 64 KiB of UTF-8 without splitting a character. */
export function truncatePayload(payload: string, maxBytes = MAX_PAYLOAD_BYTES): string {
  // A UTF-16 code unit is at most 3 bytes of UTF-8, so short strings need no measuring.
  if (payload.length * 3 <= maxBytes || Buffer.byteLength(payload) <= maxBytes) return payload;
  const bytes = Buffer.from(payload).subarray(0, maxBytes);
  // A cut in the middle of a multi-byte character decodes to U+FFFD at the end: drop it.
  return bytes.toString('utf8').replace(/\uFFFD$/, '');
}
