import { z } from 'zod';

export const Latency = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('fixed'), ms: z.number().nonnegative() }),
  z.object({ kind: z.literal('lognormal'), medianMs: z.number().positive(), p99Ms: z.number().positive() }),
]);
export type Latency = z.infer<typeof Latency>;

const Z99 = 2.3263478740408408;

/** Draws one reply delay. Log-normal: median e^μ, p99 e^(μ + 2.326σ), the long tail of real endpoints. */
export function drawLatency(latency: Latency, random: () => number): number {
  if (latency.kind === 'fixed') return latency.ms;
  const sigma = Math.log(latency.p99Ms / latency.medianMs) / Z99;
  // Box-Muller; 1 - random() keeps the logarithm away from zero.
  const normal = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  return latency.medianMs * Math.exp(sigma * normal);
}

/** The mean of a latency distribution: the L in the ideal throughput C/L. */
export function meanLatency(latency: Latency): number {
  if (latency.kind === 'fixed') return latency.ms;
  const sigma = Math.log(latency.p99Ms / latency.medianMs) / Z99;
  return latency.medianMs * Math.exp((sigma * sigma) / 2);
}
