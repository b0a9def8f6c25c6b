import { createHash } from 'node:crypto';

/** A seeded PRNG (mulberry32): the server's latencies and faults repeat run after run. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** A PRNG seeded from a string, for values that follow from a prompt. */
export function seededFrom(text: string): () => number {
  return seeded(Number.parseInt(sha256(text).slice(0, 8), 16));
}
