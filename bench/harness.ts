/** Milliseconds that fn takes. */
export async function timed(fn: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

/**
 * Median records/s of a figure and of its baseline, their runs interleaved (a, b, a, b, ...) so
 * that drift in the machine's speed hits both alike. Each run sets up what it needs and returns
 * only the milliseconds of the part being measured.
 */
export async function pairedRates(
  n: number,
  figure: () => Promise<number>,
  baseline: () => Promise<number>,
  repeats = 5,
): Promise<{ figure: number; baseline: number }> {
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < repeats; i++) {
    a.push(n / ((await figure()) / 1000));
    b.push(n / ((await baseline()) / 1000));
  }
  return { figure: median(a), baseline: median(b) };
}

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

export const fmt = (x: number) => Math.round(x).toLocaleString('en-US');

/** One printed line: the figure, the baseline it is measured against, and their ratio. */
export function ratioLine(
  label: string,
  value: number,
  baselineLabel: string,
  baseline: number,
  unit = 'records/s',
): string {
  return `${label}: ${fmt(value)} ${unit} vs ${baselineLabel}: ${fmt(baseline)} ${unit} = ${(value / baseline).toFixed(2)}x`;
}
