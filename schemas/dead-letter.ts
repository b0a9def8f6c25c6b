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
  'skipped-by-operator', // a page a person gave up (`bioalchemy poll --skip`); pollers never skip by themselves
  // Extract:
  'not-english',
  'no-question', // no passage of the article gave a question
  'question-unusable', // a generated question the record schema refuses
  // The LLM stages (extract, grade, classify):
  'llm-reply-invalid', // the reply would not validate, even after a repair request
  'llm-request-refused', // the endpoint refused the request for good
  'llm-refusal', // the model declined to answer (message.refusal); the dead letter carries its words
  'llm-context-exceeded', // the prompt and the least reply do not fit the model's context
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
    [/the model refused: /, 'llm-refusal'],
    [/over the model's context/, 'llm-context-exceeded'],
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
    [/unknown file type|neither jats nor pubmed|invalid jsonl mapping/, 'unknown-format'],
    [/api status|has \d+ matches but esearch lists|http \d{3}/, 'api-error'],
    [
      /malformed|gzip|invalid json|not a json object|unexpected (json|record|result|<)|no record element|without medlinecitation/,
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

/** What a record on the dead-letter topic that is no dead letter counts as (anyone can produce to it). */
const NOT_A_DEAD_LETTER = 'not-a-dead-letter';

/**
 * A dead-letter topic's record value as what its readers group by: its code, processor and
 * reason. A record that is no dead letter (not JSON, no reason) is counted as such, never thrown:
 * it must not end a run summary or a dashboard.
 */
function deadLetterOf(value: string): {
  code: DeadLetterCode | typeof NOT_A_DEAD_LETTER;
  processor: string;
  reason: string;
} {
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch {}
  const parsed = DeadLetter.safeParse(json);
  if (parsed.success)
    return { code: parsed.data.code, processor: parsed.data.processor ?? '', reason: parsed.data.reason };
  const processor = (json as { processor?: unknown } | null)?.processor;
  return {
    code: NOT_A_DEAD_LETTER,
    processor: typeof processor === 'string' ? processor : '',
    reason: 'not a dead letter',
  };
}

/**
 * A dead letter's reason without its particulars, so alike reasons count together: ids (hex of 8
 * or more with a digit) become <id>, numbers N, quoted text and paths …, the processor's own name in front goes (the panel shows it),
 * at most 80 characters.
 */
export function reasonClass(reason: string, processor = ''): string {
  let r = reason
    .replace(/"[^"]*"|'[^']*'|`[^`]*`/g, '…')
    .replace(/(?:[A-Za-z]:)?(?:\/[\w.@+-]+){2,}\/?/g, '…')
    .replace(/\b(?=[0-9a-f]*\d)[0-9a-f]{8,}\b/gi, '<id>')
    .replace(/\d+(?:\.\d+)?/g, 'N')
    .trim();
  if (processor && r.startsWith(`${processor}: `)) r = r.slice(processor.length + 2);
  return r.length > 80 ? `${r.slice(0, 79)}…` : r;
}

/** Dead letters of one code from one processor, with their reasons (without particulars) by count. */
export interface DeadLetterGroup {
  code: string;
  processor: string;
  n: number;
  reasons: { reason: string; n: number }[];
}

/**
 * Dead-letter topic records counted by code and processor, each group with its reasons (see
 * reasonClass): what the run summary, the dashboard's panel and its API show.
 */
export class DeadLetterCounts {
  private readonly groups = new Map<
    string,
    { code: string; processor: string; n: number; reasons: Map<string, number> }
  >();
  total = 0;

  /** Counts one record value of the dead-letter topic. */
  add(value: string): void {
    const { code, processor, reason } = deadLetterOf(value);
    const key = `${code}\u0000${processor}`;
    const g = this.groups.get(key) ?? { code, processor, n: 0, reasons: new Map<string, number>() };
    this.groups.set(key, g);
    g.n++;
    const kind = reasonClass(reason, processor);
    g.reasons.set(kind, (g.reasons.get(kind) ?? 0) + 1);
    this.total++;
  }

  /** Largest group first, each with its `reasonsPerGroup` most frequent reasons. */
  byCode(reasonsPerGroup = 10): DeadLetterGroup[] {
    return [...this.groups.values()]
      .map((g) => ({
        code: g.code,
        processor: g.processor,
        n: g.n,
        reasons: [...g.reasons]
          .map(([reason, n]) => ({ reason, n }))
          .sort((a, b) => b.n - a.n || a.reason.localeCompare(b.reason))
          .slice(0, reasonsPerGroup),
      }))
      .sort((a, b) => b.n - a.n || a.code.localeCompare(b.code) || a.processor.localeCompare(b.processor));
  }
}
