import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  STAMP_KEYS_ENV,
  STAMP_SEAL_HEADER,
  StampSeal,
  VALIDATED_AS_HEADER,
} from '../../topology/runtime/kafka/stamp-seal.js';

// Issue 32: on Kafka a stamp (a schema hash anyone can compute or copy) let any producer's record
// skip validation. A stamp now counts only with a seal made by a key the deployment's workers share.
const OLD = 'old-key-0123456789abcdef';
const NEW = 'new-key-fedcba9876543210';
const OTHER = 'someone-elses-key-000000';
const STAMP = '0123456789abcdef0123456789abcdef';
const VALUE = Buffer.from('{"id":"doi:10.1/x","title":"A title"}');

/** The seal header of `value` stamped by a writer holding `keys`. */
function sealOf(keys: string[], value = VALUE, stamp = STAMP): string {
  return new StampSeal(keys).headers(stamp, value)![STAMP_SEAL_HEADER]!;
}

const RUNS = { numRuns: 200, seed: Number(process.env.FC_SEED ?? 32) };

describe('stamp seals (HMAC-SHA256 with the deployment keys)', () => {
  it('verifies a seal made with the signing key', () => {
    const headers = new StampSeal([NEW]).headers(STAMP, VALUE)!;
    expect(headers[VALIDATED_AS_HEADER]).toBe(STAMP);
    expect(new StampSeal([NEW]).verified(STAMP, headers[STAMP_SEAL_HEADER], VALUE)).toBe(STAMP);
  });

  it('verifies a seal made with a rotated-out key still listed, and signs with the first key', () => {
    const reader = new StampSeal([NEW, OLD]);
    expect(reader.verified(STAMP, sealOf([OLD]), VALUE)).toBe(STAMP);
    // What a reader holding only the new key accepts is what the rotated writer now seals.
    expect(new StampSeal([NEW]).verified(STAMP, sealOf([NEW, OLD]), VALUE)).toBe(STAMP);
    // Once the old key is dropped, its seals count no more.
    expect(new StampSeal([NEW]).verified(STAMP, sealOf([OLD]), VALUE)).toBeUndefined();
  });

  it('refuses a seal made with a key that is not ours', () => {
    expect(new StampSeal([NEW, OLD]).verified(STAMP, sealOf([OTHER]), VALUE)).toBeUndefined();
  });

  it('refuses a copied seal over another value, or under another stamp', () => {
    const seal = sealOf([NEW]);
    const reader = new StampSeal([NEW]);
    expect(
      reader.verified(STAMP, seal, Buffer.from('{"id":"doi:10.1/x","title":"A titlE"}')),
    ).toBeUndefined();
    expect(reader.verified(`${STAMP.slice(1)}0`, seal, VALUE)).toBeUndefined();
    expect(reader.verified(STAMP, undefined, VALUE)).toBeUndefined();
    expect(reader.verified(STAMP, 'not base64 of 32 bytes', VALUE)).toBeUndefined();
  });

  it('without keys seals nothing and trusts nothing', () => {
    const none = StampSeal.fromEnv({});
    expect(none.active).toBe(false);
    expect(none.headers(STAMP, VALUE)).toBeUndefined();
    expect(none.verified(STAMP, sealOf([NEW]), VALUE)).toBeUndefined();
  });

  it('reads the keys from the environment, and refuses a short key without showing it', () => {
    const seal = StampSeal.fromEnv({ [STAMP_KEYS_ENV]: ` ${NEW} , ${OLD},` });
    expect(seal.keyCount).toBe(2);
    expect(seal.verified(STAMP, sealOf([OLD]), VALUE)).toBe(STAMP);
    expect(() => StampSeal.fromEnv({ [STAMP_KEYS_ENV]: `${NEW},hunter2` })).toThrow(
      /key 2 of 2 has 7 characters, under 16/,
    );
    expect(() => StampSeal.fromEnv({ [STAMP_KEYS_ENV]: `${NEW},hunter2` })).not.toThrow(/hunter2/);
  });

  it('any change to the value breaks the seal (property)', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 200 }),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        (bytes, at, flip) => {
          const value = Buffer.from(bytes);
          const tampered = Buffer.from(value);
          const i = at % tampered.length;
          tampered[i] = tampered[i]! ^ flip;
          const reader = new StampSeal([NEW, OLD]);
          const seal = sealOf([NEW], value);
          return (
            reader.verified(STAMP, seal, value) === STAMP &&
            reader.verified(STAMP, seal, tampered) === undefined
          );
        },
      ),
      RUNS,
    );
  });
});
