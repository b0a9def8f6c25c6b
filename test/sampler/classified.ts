import type { MixItem } from '../../processors/sampler/selection.js';
import { ClassifiedQa } from '../../schemas/qa.js';

/** A valid classified QA record for a generated item: what classify would emit for it. */
export function classifiedOf(item: MixItem, i: number): ClassifiedQa {
  const articleId = `doi:10.9999/gen.${Math.floor(i / 5)}`;
  return ClassifiedQa.parse({
    candidate: {
      id: item.id,
      articleId,
      kind: 'multiple-choice',
      passage: { sectionIndex: 0, start: 0, end: 20, text: 'A generated passage.' },
      question: `Which option is right for generated question ${item.id}?`,
      options: ['first', 'second', 'third', 'fourth'],
      answer: 'ABCD'[i % 4],
      provenance: {
        articleId,
        source: item.source,
        licence: 'CC BY 4.0',
        journal: 'Generated Journal',
        published: item.published,
      },
      generatedBy: { model: 'generator', promptVersion: 'mcq-v2' },
    },
    grade: {
      scores: { quality: 0.9, difficulty: 0.5, answerability: 1, verifiability: 1 },
      verdict: 'accept',
      reasons: [],
      gradedBy: { model: 'generator', promptVersion: 'mcq-quality-v1' },
    },
    classification: {
      labels: item.topics.map((category) => ({ category, confidence: 0.9 })),
      meshLabels: [],
      taxonomy: { name: 'MeSH Biology', meshYear: 2024 },
      classifiedBy: { model: 'generator', promptVersion: 'classify-v1' },
    },
  });
}

/** Distinct item ids per topic: what every count of these items must equal. */
export function distinctPerTopic(items: readonly MixItem[]): { category: string; n: number }[] {
  const byTopic = new Map<string, Set<string>>();
  for (const it of items) for (const t of it.topics) byTopic.set(t, (byTopic.get(t) ?? new Set()).add(it.id));
  return [...byTopic]
    .map(([category, ids]) => ({ category, n: ids.size }))
    .sort((a, b) => a.category.localeCompare(b.category));
}
