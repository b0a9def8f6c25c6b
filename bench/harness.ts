/** Milliseconds that fn takes. */
export async function timed(fn: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

/** One measured run: how many records it moved in how many milliseconds. */
export interface Run {
  ms: number;
  records: number;
}

/**
 * Median records/s of a figure and of its baseline, their runs interleaved (a, b, a, b, ...) so
 * that drift in the machine's speed hits both alike. Each run sets up what it needs and reports
 * only the part being measured.
 */
export async function pairedRates(
  figure: () => Promise<Run>,
  baseline: () => Promise<Run>,
  repeats = 5,
): Promise<{ figure: number; baseline: number }> {
  const a: number[] = [];
  const b: number[] = [];
  const rate = (r: Run) => r.records / (r.ms / 1000);
  for (let i = 0; i < repeats; i++) {
    a.push(rate(await figure()));
    b.push(rate(await baseline()));
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
