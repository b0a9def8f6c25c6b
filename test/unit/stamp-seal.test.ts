import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { STAMP_KEYS_ENV, StampSeal } from '../../topology/runtime/kafka/stamp-seal.js';

// Issue 32: on Kafka a stamp (a schema hash anyone can compute or copy) let any producer's record
// skip validation. A stamp now counts only with a seal made by a key the deployment's workers share.
const OLD = 'old-key-0123456789abcdef';
const NEW = 'new-key-fedcba9876543210';
const OTHER = 'someone-elses-key-000000';
const STAMP = '0123456789abcdef0123456789abcdef';
const VALUE = Buffer.from('{"id":"doi:10.1/x","title":"A title"}');

/** The header a writer holding `keys` puts on `value` stamped STAMP. */
const sealedBy = (keys: string[], value = VALUE, stamp = STAMP) => new StampSeal(keys).sealed(stamp, value)!;

const RUNS = { numRuns: 200, seed: Number(process.env.FC_SEED ?? 32) };

describe('stamp seals (HMAC-SHA256 with the deployment keys)', () => {
  it('verifies a seal made with the signing key', () => {
    const header = sealedBy([NEW]);
    expect(header.startsWith(`${STAMP}.`)).toBe(true);
    expect(new StampSeal([NEW]).verified(header, VALUE)).toBe(STAMP);
  });

  it('verifies a seal made with a rotated-out key still listed, and signs with the first key', () => {
    const reader = new StampSeal([NEW, OLD]);
    expect(reader.verified(sealedBy([OLD]), VALUE)).toBe(STAMP);
    // What a reader holding only the new key accepts is what the rotated writer now seals.
    expect(new StampSeal([NEW]).verified(sealedBy([NEW, OLD]), VALUE)).toBe(STAMP);
    // Once the old key is dropped, its seals count no more.
    expect(new StampSeal([NEW]).verified(sealedBy([OLD]), VALUE)).toBeUndefined();
  });

  it('refuses a seal made with a key that is not ours', () => {
    expect(new StampSeal([NEW, OLD]).verified(sealedBy([OTHER]), VALUE)).toBeUndefined();
  });

  it('refuses a copied seal over another value, under another stamp, or no seal at all', () => {
    const header = sealedBy([NEW]);
    const reader = new StampSeal([NEW]);
    expect(reader.verified(header, Buffer.from('{"id":"doi:10.1/x","title":"A titlE"}'))).toBeUndefined();
    expect(reader.verified(`${STAMP.slice(1)}0${header.slice(STAMP.length)}`, VALUE)).toBeUndefined();
    // The stamp alone, as releases before seals wrote it, or with a seal cut short.
    expect(reader.verified(STAMP, VALUE)).toBeUndefined();
    expect(reader.verified(header.slice(0, -4), VALUE)).toBeUndefined();
    expect(reader.verified(undefined, VALUE)).toBeUndefined();
  });

  it('without keys seals nothing and trusts nothing', () => {
    const none = StampSeal.fromEnv({});
    expect(none.active).toBe(false);
    expect(none.sealed(STAMP, VALUE)).toBeUndefined();
    expect(none.verified(sealedBy([NEW]), VALUE)).toBeUndefined();
  });

  it('reads the keys from the environment, and refuses a short key without showing it', () => {
    const seal = StampSeal.fromEnv({ [STAMP_KEYS_ENV]: ` ${NEW} , ${OLD},` });
    expect(seal.keyCount).toBe(2);
    expect(seal.verified(sealedBy([OLD]), VALUE)).toBe(STAMP);
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
          const header = sealedBy([NEW], value);
          return reader.verified(header, value) === STAMP && reader.verified(header, tampered) === undefined;
        },
      ),
      RUNS,
    );
  });
});
