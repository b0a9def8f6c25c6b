import type { Llm } from '../llm/index.js';
import { CLASSIFY_PROMPT, classifyMessages, classifyReply } from '../llm/prompts/classify.js';
import type { Article } from '../schemas/article.js';
import type { Taxonomy } from '../schemas/taxonomy.js';
import { mapConcurrent } from '../topology/processor.js';
import { confidentLabels } from './classify.js';

/** The paper's multi-label MeSH Biology classifier F1 on its validation set (PAPER-FIGURES.md). */
export const PAPER_F1 = 0.727;

export interface Scores {
  readonly precision: number;
  readonly recall: number;
  readonly f1: number;
  readonly support: number;
}

export interface ClassifierReport {
  readonly articles: number;
  readonly failed: number;
  readonly perCategory: ReadonlyMap<string, Scores>;
  readonly micro: Scores;
  readonly macro: Scores;
}

/** The categories an article's own MeSH headings reach: the reference labels of the evaluation. */
export function meshCategories(article: Article, taxonomy: Taxonomy): string[] {
  return [...new Set(article.mesh.flatMap((m) => taxonomy.categoriesOf(m.descriptorUi ?? m.name)))].sort();
}

const ratio = (a: number, b: number) => (b === 0 ? 0 : a / b);
const f1Of = (p: number, r: number) => (p + r === 0 ? 0 : (2 * p * r) / (p + r));

/**
 * Precision, recall and F1 per category and micro/macro over multi-label predictions. Macro
 * averages the categories present in the reference or the predictions, as scikit-learn does with
 * labels=None.
 */
export function multiLabelScores(
  pairs: readonly { truth: readonly string[]; predicted: readonly string[] }[],
): Omit<ClassifierReport, 'articles' | 'failed'> {
  const tp = new Map<string, number>();
  const fp = new Map<string, number>();
  const fn = new Map<string, number>();
  const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  for (const { truth, predicted } of pairs) {
    const t = new Set(truth);
    const p = new Set(predicted);
    for (const c of p) bump(t.has(c) ? tp : fp, c);
    for (const c of t) if (!p.has(c)) bump(fn, c);
  }
  const categories = [...new Set([...tp.keys(), ...fp.keys(), ...fn.keys()])].sort();
  const perCategory = new Map<string, Scores>();
  for (const c of categories) {
    const precision = ratio(tp.get(c) ?? 0, (tp.get(c) ?? 0) + (fp.get(c) ?? 0));
    const recall = ratio(tp.get(c) ?? 0, (tp.get(c) ?? 0) + (fn.get(c) ?? 0));
    perCategory.set(c, {
      precision,
      recall,
      f1: f1Of(precision, recall),
      support: (tp.get(c) ?? 0) + (fn.get(c) ?? 0),
    });
  }
  const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  const microP = ratio(sum(tp), sum(tp) + sum(fp));
  const microR = ratio(sum(tp), sum(tp) + sum(fn));
  const mean = (f: (s: Scores) => number) =>
    ratio(
      [...perCategory.values()].reduce((a, s) => a + f(s), 0),
      perCategory.size,
    );
  const support = sum(tp) + sum(fn);
  return {
    perCategory,
    micro: { precision: microP, recall: microR, f1: f1Of(microP, microR), support },
    macro: {
      precision: mean((s) => s.precision),
      recall: mean((s) => s.recall),
      f1: mean((s) => s.f1),
      support,
    },
  };
}

/**
 * Classifies articles whose MeSH headings reach the taxonomy, from their title and abstract with
 * the pipeline's classify prompt, and scores the labels against the MeSH-derived ones. The labels
 * predicted are those the classify processor keeps (at or above classify.minConfidence), so the
 * scores are the pipeline's. A call that fails counts as an article with no labels predicted.
 */
export async function evaluateClassifier(opts: {
  llm: Llm;
  taxonomy: Taxonomy;
  /** classify.minConfidence: a label under it is no prediction, as in the pipeline. */
  minConfidence: number;
  articles: readonly Article[];
  concurrency: number;
  onProgress?: (done: number) => void;
}): Promise<ClassifierReport> {
  const schema = classifyReply(opts.taxonomy);
  let done = 0;
  let failed = 0;
  const pairs = await mapConcurrent(opts.articles, opts.concurrency, async (article) => {
    const truth = meshCategories(article, opts.taxonomy);
    let predicted: string[] = [];
    try {
      const reply = await opts.llm.complete({
        stage: 'classify',
        schema,
        promptVersion: CLASSIFY_PROMPT,
        messages: classifyMessages(opts.taxonomy, { title: article.title, abstract: article.abstract }),
      });
      predicted = confidentLabels(reply.value.labels, opts.minConfidence).map((l) => l.category);
    } catch {
      failed++;
    }
    opts.onProgress?.(++done);
    return { truth, predicted };
  });
  return { articles: pairs.length, failed, ...multiLabelScores(pairs) };
}
