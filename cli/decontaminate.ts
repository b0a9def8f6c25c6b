import { EvalSetError, loadEvalIndex, tallyMatches } from '../processors/qa/decontaminate.js';
import type { ClassifiedQa, EvalMatch } from '../schemas/qa.js';
import { configOf, forEachLogValue, withdrawnQaIds } from './context.js';
import { type GlobalOptions, UsageError } from './usage.js';

export interface DecontaminateOptions extends GlobalOptions {
  report: true;
  json?: boolean;
}

interface Removed {
  readonly id: string;
  readonly articleId: string;
  readonly question: string;
  readonly matches: EvalMatch[];
}

/**
 * `decontaminate --report`: the QA of the current mix (qa.classified, each QA once, less those
 * withdrawn) the given
 * eval sets would remove, by the same check grade applies, per set and code. Changes nothing.
 */
export async function decontaminateReport(paths: string[], opts: DecontaminateOptions): Promise<void> {
  const config = configOf(opts);
  let loaded: Awaited<ReturnType<typeof loadEvalIndex>>;
  try {
    loaded = await loadEvalIndex(paths, config.grade.nearDuplicate, config.grade.evalSetMaxMb * 2 ** 20);
  } catch (e) {
    if (e instanceof EvalSetError) throw new UsageError(e.message);
    throw e;
  }
  const { index, notices } = loaded;
  const seen = new Set<string>();
  const articles = new Set<string>();
  const removed: Removed[] = [];
  const withdrawn = await withdrawnQaIds(config);
  await forEachLogValue(config, 'qa.classified', (value) => {
    const { candidate } = value as ClassifiedQa;
    if (seen.has(candidate.id) || withdrawn.has(candidate.id)) return;
    seen.add(candidate.id);
    articles.add(candidate.articleId);
    const matches = index.check({
      ...candidate,
      options: candidate.kind === 'multiple-choice' ? candidate.options : [],
    });
    if (matches.length)
      removed.push({
        id: candidate.id,
        articleId: candidate.articleId,
        question: candidate.question,
        matches,
      });
  });
  const perSet: Record<string, { items: number; contaminated: number; 'eval-source': number }> = {};
  for (const [name, s] of index.sets) perSet[name] = { items: s.items, contaminated: 0, 'eval-source': 0 };
  for (const r of removed) tallyMatches(perSet, r.matches);
  const removedArticles = new Set(removed.map((r) => r.articleId)).size;
  if (opts.json) {
    process.stdout.write(
      `${JSON.stringify({ mix: { qa: seen.size, articles: articles.size }, sets: perSet, notices, removed }, null, 2)}\n`,
    );
    return;
  }
  const pct = (n: number, of: number) => (of ? `${((100 * n) / of).toFixed(1)}%` : '0%');
  const lines = [
    ...notices.filter((n) => n.level !== 'info').map((n) => `${n.level}: ${n.msg}`),
    `the current mix: ${seen.size} QA of ${articles.size} articles (qa.classified)`,
    `the eval sets would remove ${removed.length} QA (${pct(removed.length, seen.size)}) of ${removedArticles} articles:`,
    ...Object.entries(perSet).map(
      ([name, s]) =>
        `  ${name} (${s.items} items): ${s.contaminated} contaminated, ${s['eval-source']} eval-source`,
    ),
  ];
  if (seen.size > 0 && removed.length === seen.size)
    lines.push('warning: every QA of the mix would go: check that the sets are eval sets, not the corpus');
  for (const r of removed.slice(0, 20))
    lines.push(
      `  ${r.id}  ${r.matches.map((m) => `${m.code} ${m.evalSet}/${m.itemId} (${m.how})`).join(', ')}  ${r.question}`,
    );
  if (removed.length > 20) lines.push(`  ... and ${removed.length - 20} more (--json lists them all)`);
  process.stdout.write(`${lines.join('\n')}\n`);
}
