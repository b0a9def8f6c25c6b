import { describe, expect, it } from 'vitest';
import { referenceFigures } from '../../processors/sampler/figures.js';
import { loadReference } from '../../schemas/reference.js';

// The paper's Table 13 (../shared/PAPER-FIGURES.md), published categories only.
const TABLE_13 = {
  'computational-biology': { 1: 45.32, 0.7: 36.05, 0.5: 26.97, 0.3: 16.51 },
  genetics: { 1: 36.18, 0.7: 30.79, 0.5: 24.1, 0.3: 15.43 },
  microbiology: { 1: 10.9, 0.7: 13.3, 0.5: 13.23, 0.3: 10.77 },
  ecology: { 1: 2.56, 0.7: 4.83, 0.5: 6.42, 0.3: 6.98 },
  'molecular-biology': { 1: 1.88, 0.7: 3.88, 0.5: 5.49, 0.3: 6.35 },
} as const;
type Alpha = 1 | 0.7 | 0.5 | 0.3;

describe("the paper's Table 13 from the shipped reference", () => {
  const ref = loadReference();

  it('keeps the categories the paper does not publish unknown', () => {
    const f = referenceFigures(ref, 0.5);
    expect(f.rows.map((r) => r.category)).toEqual([
      'computational-biology',
      'genetics',
      'microbiology',
      'ecology',
      'molecular-biology',
      'synthetic-biology',
    ]);
    expect(f.unknown).toHaveLength(14);
    expect(f.unknown).toContain('botany');
    expect(f.partial).toBe(true);
  });

  it('reproduces the α = 1.0 percentages exactly', () => {
    const f = referenceFigures(ref, 1);
    expect(f.partial).toBe(false);
    for (const [c, shares] of Object.entries(TABLE_13)) {
      const row = f.rows.find((r) => r.category === c)!;
      expect((100 * row.smoothed).toFixed(2)).toBe(shares[1].toFixed(2));
      expect(row.upsample).toBe(1);
    }
    expect(f.rows.find((r) => r.category === 'synthetic-biology')!.smoothed).toBeCloseTo(0.0097, 6);
  });

  for (const alpha of [0.7, 0.5, 0.3] as const) {
    it(`matches the ratios between published categories at α = ${alpha} to rounding`, () => {
      const f = referenceFigures(ref, alpha);
      const share = (c: string) => f.rows.find((r) => r.category === c)!.smoothed;
      const cats = Object.keys(TABLE_13) as (keyof typeof TABLE_13)[];
      for (const a of cats) {
        for (const b of cats) {
          if (a === b) continue;
          const paper = TABLE_13[a][alpha as Alpha] / TABLE_13[b][alpha as Alpha];
          // Each published share is rounded to 0.01 points: the ratio carries both roundings.
          const rounding = 0.005 / TABLE_13[a][alpha as Alpha] + 0.005 / TABLE_13[b][alpha as Alpha];
          expect(Math.abs(share(a) / share(b) / paper - 1)).toBeLessThanOrEqual(rounding + 1e-9);
        }
      }
      // The example the issue names.
      if (alpha === 0.5)
        expect((share('computational-biology') / share('genetics')).toFixed(3)).toBe(
          (26.97 / 24.1).toFixed(3),
        );
    });
  }

  it('upsamples the rare categories and downsamples the common ones below α = 1', () => {
    const f = referenceFigures(ref, 0.5);
    const up = (c: string) => f.rows.find((r) => r.category === c)!.upsample;
    expect(up('computational-biology')).toBeLessThan(1);
    expect(up('molecular-biology')).toBeGreaterThan(2);
    expect(f.maxMinRatio).toBeLessThan(referenceFigures(ref, 1).maxMinRatio);
  });
});
