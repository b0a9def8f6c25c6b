import { readFileSync } from 'node:fs';
import { z } from 'zod';

export const TaxonomyFile = z.object({
  name: z.string().min(1),
  meshYear: z.number().int(),
  root: z.object({ descriptorUi: z.string(), name: z.string(), treeNumber: z.string() }),
  source: z.string(),
  categories: z
    .array(
      z.object({
        id: z.string().regex(/^[a-z0-9-]+$/),
        name: z.string().min(1),
        descriptorUi: z.string().nullable(),
        treeNumbers: z.array(z.string().min(1)).min(1),
      }),
    )
    .min(1),
  descriptors: z.array(
    z.object({ ui: z.string().nullable(), name: z.string(), treeNumbers: z.array(z.string()).min(1) }),
  ),
});
export type TaxonomyFile = z.infer<typeof TaxonomyFile>;

export const DEFAULT_TAXONOMY_PATH = new URL('./taxonomy/mesh-biology-2024.json', import.meta.url);

export interface Taxonomy {
  readonly name: string;
  readonly meshYear: number;
  readonly categories: TaxonomyFile['categories'];
  /** Categories a tree number falls under (several when MeSH lists it twice, e.g. Molecular Biology). */
  categoriesOfTreeNumber(treeNumber: string): string[];
  /** Categories of a descriptor, by UI (D…), tree number (H01.…) or exact name. */
  categoriesOf(descriptor: string): string[];
  has(categoryId: string): boolean;
}

export function loadTaxonomy(path: string | URL = DEFAULT_TAXONOMY_PATH): Taxonomy {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new Error(`taxonomy ${String(path)}: ${(e as Error).message}`);
  }
  const parsed = TaxonomyFile.safeParse(raw);
  if (!parsed.success) throw new Error(`taxonomy ${String(path)}: ${z.prettifyError(parsed.error)}`);
  return buildTaxonomy(parsed.data);
}

export function buildTaxonomy(file: TaxonomyFile): Taxonomy {
  const ids = new Set(file.categories.map((c) => c.id));
  const treesOf = new Map<string, string[]>();
  const remember = (key: string | null, trees: string[]) => {
    if (!key) return;
    const k = key.toLowerCase();
    treesOf.set(k, [...new Set([...(treesOf.get(k) ?? []), ...trees])]);
  };
  for (const d of file.descriptors) {
    remember(d.ui, d.treeNumbers);
    remember(d.name, d.treeNumbers);
  }
  for (const c of file.categories) {
    remember(c.descriptorUi, c.treeNumbers);
    remember(c.name, c.treeNumbers);
  }
  const categoriesOfTreeNumber = (tn: string): string[] =>
    file.categories
      .filter((c) => c.treeNumbers.some((root) => tn === root || tn.startsWith(`${root}.`)))
      .map((c) => c.id);
  return {
    name: file.name,
    meshYear: file.meshYear,
    categories: file.categories,
    categoriesOfTreeNumber,
    categoriesOf(descriptor) {
      const key = descriptor.trim();
      const trees = /^[A-Z]\d{2}(\.\d{3})*$/.test(key) ? [key] : (treesOf.get(key.toLowerCase()) ?? []);
      return [...new Set(trees.flatMap(categoriesOfTreeNumber))].sort();
    },
    has: (id) => ids.has(id),
  };
}
