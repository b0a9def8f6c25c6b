import { z } from 'zod';

/** Every dropped input becomes one of these: nothing is dropped silently. */
export const DeadLetter = z.object({
  id: z.string().min(1).describe('contentHash of where the input was and why it failed'),
  reason: z.string().min(1),
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
