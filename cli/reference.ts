import { writeFileSync } from 'node:fs';
import type { Article } from '../schemas/article.js';
import type { Reference } from '../schemas/reference.js';
import { loadTaxonomy, type Taxonomy } from '../schemas/taxonomy.js';
import { configOf, forEachLogValue } from './context.js';
import { type GlobalOptions, UsageError } from './usage.js';

export interface BuildOptions extends GlobalOptions {
  fromYear: number;
  toYear: number;
  out?: string;
  name?: string;
}

/**
 * The reference from articles: every taxonomy category gets a count (0 included), so the result is
 * complete; the total is the articles that reached at least one category.
 */
export function referenceFromArticles(
  articles: Iterable<Pick<Article, 'published' | 'mesh'>>,
  taxonomy: Taxonomy,
  fromYear: number,
  toYear: number,
  name: string,
): Reference {
  const counts = new Map(taxonomy.categories.map((c) => [c.id, 0]));
  let total = 0;
  for (const a of articles) {
    const y = a.published ? Number(a.published.slice(0, 4)) : Number.NaN;
    if (!(y >= fromYear && y <= toYear)) continue;
    const categories = new Set(a.mesh.flatMap((m) => taxonomy.categoriesOf(m.descriptorUi ?? m.name)));
    if (categories.size === 0) continue;
    total++;
    for (const c of categories) counts.set(c, (counts.get(c) ?? 0) + 1);
  }
  return {
    name,
    description: `MEDLINE articles published ${fromYear}-${toYear} with MeSH headings under ${taxonomy.name} ${taxonomy.meshYear}`,
    total: total || null,
    categories: Object.fromEntries([...counts].map(([c, n]) => [c, { count: n, share: null }])),
  };
}

export async function build(opts: BuildOptions): Promise<void> {
  if (opts.fromYear > opts.toYear) throw new UsageError('--from-year is after --to-year');
  const config = configOf(opts);
  const taxonomy = loadTaxonomy(config.taxonomy);
  // Only what counting needs is kept: a MEDLINE baseline is millions of articles.
  const articles: Pick<Article, 'published' | 'mesh'>[] = [];
  await forEachLogValue(config, 'articles', (value) => {
    const { published, mesh } = value as Article;
    if (mesh.length > 0) articles.push({ published, mesh });
  });
  const ref = referenceFromArticles(
    articles,
    taxonomy,
    opts.fromYear,
    opts.toYear,
    opts.name ?? `medline-${opts.fromYear}-${opts.toYear}`,
  );
  if (ref.total === null)
    throw new Error(
      `no ingested article published ${opts.fromYear}-${opts.toYear} has MeSH headings under the taxonomy: ingest MEDLINE first`,
    );
  const text = `${JSON.stringify(ref, null, 2)}\n`;
  if (opts.out) {
    writeFileSync(opts.out, text);
    process.stderr.write(`${ref.total} articles counted into ${opts.out}\n`);
  } else process.stdout.write(text);
}
