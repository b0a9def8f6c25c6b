import { evaluateClassifier, meshCategories, PAPER_F1 } from '../processors/eval-classify.js';
import type { Article } from '../schemas/article.js';
import { loadTaxonomy } from '../schemas/taxonomy.js';
import { EngineMetrics } from '../topology/metrics.js';
import { configOf, forEachLogValue, loggerOf } from './context.js';
import { openLlm } from './llm.js';
import { Progress } from './progress.js';
import type { GlobalOptions } from './usage.js';

export interface EvalOptions extends GlobalOptions {
  limit?: number;
}

export async function evalClassify(opts: EvalOptions): Promise<void> {
  const config = configOf(opts);
  const log = loggerOf(opts);
  const taxonomy = loadTaxonomy(config.taxonomy);
  const articles: Article[] = [];
  await forEachLogValue(config, 'articles', (value) => {
    const article = value as Article;
    if (meshCategories(article, taxonomy).length) articles.push(article);
  });
  const chosen = articles.slice(0, opts.limit ?? articles.length);
  if (chosen.length === 0) {
    process.stderr.write('no ingested article has MeSH headings under the taxonomy: ingest MEDLINE first\n');
    return;
  }
  const llm = openLlm(config, { registry: new EngineMetrics().registry, log: log.child({ layer: 'llm' }) });
  const progress = new Progress('eval classify', chosen.length, 'articles');
  try {
    const report = await evaluateClassifier({
      llm,
      taxonomy,
      minConfidence: config.classify.minConfidence,
      articles: chosen,
      concurrency: config.processors.classify?.concurrency ?? 16,
      onProgress: () => progress.tick(),
    });
    progress.done();
    const pct = (x: number) => `${(100 * x).toFixed(1)}%`.padStart(7);
    const lines = [
      `classifier against MeSH-derived labels: ${report.articles} articles (${report.failed} failed calls)`,
      `${'category'.padEnd(26)}precision  recall      F1  support`,
    ];
    for (const [category, s] of report.perCategory)
      lines.push(
        `${category.padEnd(26)}${pct(s.precision)}  ${pct(s.recall)} ${pct(s.f1)}  ${String(s.support).padStart(7)}`,
      );
    for (const [name, s] of [
      ['micro', report.micro],
      ['macro', report.macro],
    ] as const)
      lines.push(
        `${name.padEnd(26)}${pct(s.precision)}  ${pct(s.recall)} ${pct(s.f1)}  ${String(s.support).padStart(7)}`,
      );
    lines.push(`paper (multi-label, validation, against human labels): F1 ${pct(PAPER_F1).trim()}`);
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await llm.close();
  }
}
