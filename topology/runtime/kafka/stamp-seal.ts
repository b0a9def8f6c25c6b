import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The Kafka header carrying LogRecord.validatedAs, sealed: `<stamp>.<seal>`, the stamp the schema
 * fingerprint the writer validated against, the seal an HMAC-SHA256 of the stamp and the value's
 * bytes (base64url). One header, not two: node-rdkafka pays for each header of every message.
 */
export const VALIDATED_AS_HEADER = 'bioalchemy-validated-as';

/** The environment variable holding the deployment's stamp keys: a comma list, the first signs, all verify. */
export const STAMP_KEYS_ENV = 'BIOALCHEMY_STAMP_KEYS';

/** Shorter keys are refused: a guessable key would let anyone seal a record. */
export const MIN_STAMP_KEY_LENGTH = 16;

const SEAL_BYTES = 32;

/**
 * Who may vouch that a record on Kafka was validated: only a holder of one of the deployment's
 * keys. The stamp alone is a schema hash anyone can compute, or copy from a real record's headers,
 * so on its own it would let any producer to a topic skip validation and run processor code on
 * data of the wrong shape. The seal binds the stamp to the exact bytes of the value; a record
 * whose seal does not verify (none, another value, a key not ours) is validated like any other.
 * With no key set, nothing is sealed and nothing is trusted: every record is validated.
 */
export class StampSeal {
  private readonly keys: readonly Buffer[];

  /** `keys`: the first signs, every one verifies (rotation: prepend the new key, drop the old later). */
  constructor(keys: readonly string[]) {
    for (const [i, key] of keys.entries())
      if (key.length < MIN_STAMP_KEY_LENGTH)
        // The key itself is never in a message: it would end up in logs.
        throw new Error(
          `${STAMP_KEYS_ENV}: key ${i + 1} of ${keys.length} has ${key.length} characters, under ${MIN_STAMP_KEY_LENGTH}`,
        );
    this.keys = keys.map((k) => Buffer.from(k, 'utf8'));
  }

  /** The keys of `${STAMP_KEYS_ENV}` (comma-separated; blanks around and empty entries ignored). */
  static fromEnv(env: NodeJS.ProcessEnv = process.env): StampSeal {
    const list = (env[STAMP_KEYS_ENV] ?? '')
      .split(',')
      .map((k) => k.trim())
      .filter((k) => k.length > 0);
    return new StampSeal(list);
  }

  /** Whether stamps are sealed and trusted at all (some key is set). */
  get active(): boolean {
    return this.keys.length > 0;
  }

  /** How many keys verify: for the start-up log line, which never shows a key. */
  get keyCount(): number {
    return this.keys.length;
  }

  /** The sealed stamp header's value for an outgoing value; none when there is no stamp or no key. */
  sealed(stamp: string | undefined, value: Buffer): string | undefined {
    if (stamp === undefined || !this.active) return undefined;
    return `${stamp}.${mac(this.keys[0]!, stamp, value).toString('base64url')}`;
  }

  /** The stamp of a consumed value's header when its seal verifies under one of the keys; otherwise none. */
  verified(header: string | undefined, value: Buffer | null): string | undefined {
    if (header === undefined || !this.active) return undefined;
    const dot = header.lastIndexOf('.');
    if (dot < 0) return undefined;
    const stamp = header.slice(0, dot);
    const given = Buffer.from(header.slice(dot + 1), 'base64url');
    if (given.length !== SEAL_BYTES) return undefined;
    const bytes = value ?? EMPTY;
    for (const key of this.keys) if (timingSafeEqual(given, mac(key, stamp, bytes))) return stamp;
    return undefined;
  }
}

const EMPTY = Buffer.alloc(0);
const SEPARATOR = Buffer.from([0]);

/** HMAC-SHA256 over the stamp, a NUL (no stamp contains one) and the value's bytes as on the wire. */
function mac(key: Buffer, stamp: string, value: Buffer): Buffer {
  return createHmac('sha256', key).update(stamp, 'utf8').update(SEPARATOR).update(value).digest();
}
