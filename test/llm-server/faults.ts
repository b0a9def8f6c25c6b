import { z } from 'zod';

export const FaultKind = z.enum([
  'rate-limit', // 429 with Retry-After
  'server-error', // 500
  'timeout', // the request is read and never answered
  'reset', // the connection is destroyed without a reply
  'truncated', // 200 with the JSON content cut in half
  'schema-break', // 200 with valid JSON that matches no stage schema
  'bad-request', // 400: a request the endpoint will never accept
  'stall', // streamed: half the reply's events, then silence with the connection open (whole: never answered)
  'unreadable', // 200 with a body that is no chat completion: a web page, as a proxy or web app in front answers
]);
export type FaultKind = z.infer<typeof FaultKind>;

export const Faults = z
  .object({
    /** Faults for the next requests in order, before any drawn by `rate`; null answers normally. */
    sequence: z.array(FaultKind.nullable()).default([]),
    /** Share of requests (after the sequence) that get a fault, drawn from `kinds`. */
    rate: z.number().min(0).max(1).default(0),
    kinds: z.array(FaultKind).default(['rate-limit', 'server-error', 'timeout', 'reset']),
    retryAfterSeconds: z.number().nonnegative().default(1),
  })
  .strict();
export type Faults = z.infer<typeof Faults>;

/** Decides each request's fault: the scripted sequence first, then the seeded rate. */
export class FaultPlan {
  private faults: Faults;
  private step = 0;

  constructor(
    faults: z.input<typeof Faults>,
    private readonly random: () => number,
  ) {
    this.faults = Faults.parse(faults);
  }

  set(faults: z.input<typeof Faults>): void {
    this.faults = Faults.parse(faults);
    this.step = 0;
  }

  get retryAfterSeconds(): number {
    return this.faults.retryAfterSeconds;
  }

  next(): FaultKind | null {
    const { sequence, rate, kinds } = this.faults;
    if (this.step < sequence.length) return sequence[this.step++] ?? null;
    if (rate === 0 || this.random() >= rate) return null;
    return kinds[Math.floor(this.random() * kinds.length)] ?? null;
  }
}
