import type { MixItem } from '../../processors/sampler/selection.js';
import { seeded } from '../llm-server/random.js';

/** The test server's seeded PRNG (mulberry32): generated datasets are the same in every run. */
export const prng = seeded;

/** A complete reference over 12 categories, skewed like PubMed biology (largest ~ 40x smallest). */
export const REFERENCE: Record<string, number> = {
  'computational-biology': 95_179,
  genetics: 75_973,
  microbiology: 22_900,
  'cell-biology': 14_000,
  neurobiology: 9_000,
  ecology: 5_385,
  'molecular-biology': 3_944,
  'developmental-biology': 3_500,
  zoology: 3_000,
  botany: 2_800,
  'synthetic-biology': 2_037,
  parasitology: 2_400,
};

/**
 * QA items whose topics follow a different skew than the reference (as the paper's full dataset
 * did), averaging about 1.4 labels, from a few sources over five years.
 */
export function generateItems(n: number, seed = 1, idPrefix = 'qa'): MixItem[] {
  const rand = prng(seed);
  const categories = Object.keys(REFERENCE);
  // Item skew: genetics and microbiology over-represented, computational biology under.
  const weights = categories.map((c, i) =>
    c === 'genetics' ? 30 : c === 'microbiology' ? 25 : 12 / (i + 1),
  );
  const total = weights.reduce((s, w) => s + w, 0);
  const pick = () => {
    let r = rand() * total;
    for (let i = 0; i < categories.length; i++) {
      r -= weights[i]!;
      if (r <= 0) return categories[i]!;
    }
    return categories.at(-1)!;
  };
  const sources = ['asm', 'plos-compbio', 'plos-genetics', 'semantic-scholar'];
  return Array.from({ length: n }, (_, i) => {
    const topics = new Set([pick()]);
    if (rand() < 0.3) topics.add(pick());
    if (rand() < 0.08) topics.add(pick());
    const year = 2020 + Math.floor(rand() * 5);
    return {
      id: `${idPrefix}-${seed}-${i}`,
      topics: [...topics],
      source: sources[Math.floor(rand() * sources.length)]!,
      published: `${year}-0${1 + Math.floor(rand() * 9)}-1${Math.floor(rand() * 9)}`,
    };
  });
}
