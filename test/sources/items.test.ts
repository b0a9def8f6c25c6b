import { describe, expect, it } from 'vitest';
import { DeadLetter } from '../../schemas/dead-letter.js';
import { deadLetter, MAX_PAYLOAD_BYTES, truncatePayload } from '../../sources/items.js';

describe('dead letters from readers', () => {
  it('truncate the payload to 64 KiB of UTF-8 without splitting a character', () => {
    const big = 'é'.repeat(40_000); // 80,000 bytes
    const cut = truncatePayload(big);
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(MAX_PAYLOAD_BYTES);
    expect(cut).toBe('é'.repeat(MAX_PAYLOAD_BYTES / 2));
    const odd = `x${'é'.repeat(40_000)}`;
    expect(truncatePayload(odd)).toBe(`x${'é'.repeat(MAX_PAYLOAD_BYTES / 2 - 1)}`);
    expect(truncatePayload('short')).toBe('short');
  });

  it('are valid DeadLetter records with a stable id from where and why', () => {
    const make = () =>
      deadLetter({
        path: 'a.xml',
        position: 'record 2',
        code: 'no-text',
        reason: 'no text',
        processor: 'sources/medline',
        payload: 'x'.repeat(70_000),
      });
    const a = make();
    if (a.kind !== 'dead-letter') throw new Error('unreachable');
    expect(DeadLetter.parse(a.deadLetter)).toEqual(a.deadLetter);
    expect(a.deadLetter.payload).toHaveLength(MAX_PAYLOAD_BYTES);
    expect(make()).toEqual(a);
    const b = deadLetter({
      path: 'a.xml',
      position: 'record 3',
      code: 'no-text',
      reason: 'no text',
      processor: 'sources/medline',
    });
    expect(b.kind === 'dead-letter' && b.deadLetter.id).not.toBe(a.deadLetter.id);
  });
});
