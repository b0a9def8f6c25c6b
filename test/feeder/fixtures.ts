import type { PoolItem } from '../../processors/feeder/row.js';
import { copiesOf, heldOutArticles } from '../../processors/sampler/selection.js';
import { MixState } from '../../schemas/mix-state.js';

const TOPICS = ['Genetics', 'Ecology', 'Microbiology', 'Botany'];
const LETTERS = 'ABCD';

/**
 * n multiple-choice items over four topics (every 5th a free-form one), deterministic. An article
 * holds three QA of one topic (items i, i + 4, i + 8), so holding out Botany holds out its
 * articles and the few others one of whose QA has Botany as a second topic (every 7th item has two).
 */
export function poolItems(n: number, prefix = 'qa'): PoolItem[] {
  return Array.from({ length: n }, (_, i) => {
    const mcq = i % 5 !== 4;
    return {
      id: `${prefix}-${String(i).padStart(5, '0')}`,
      articleId: `article-${i % 4}-${Math.floor(i / 12)}`,
      kind: mcq ? 'mcq' : 'free-form',
      question: `Question ${i}: which organelle?`,
      options: mcq ? ['Mitochondria', 'Ribosome', 'Golgi apparatus', 'Nucleus'] : [],
      answer: mcq ? LETTERS[i % 4]! : `answer ${i}`,
      topics: i % 7 === 0 ? [TOPICS[i % 4]!, TOPICS[(i + 1) % 4]!] : [TOPICS[i % 4]!],
      source: i % 11 === 0 ? 'medline' : 'jats',
      published: `20${10 + (i % 15)}`,
      grade: { quality: 0.8, difficulty: 0.5, answerability: 0.9, verifiability: 0.9 },
    } satisfies PoolItem;
  });
}

/**
 * A mix: Genetics items 1-2 copies, Ecology and Microbiology at most one, Botany held out.
 * Parsed from plain data so it fits the schema with or without fields added later.
 */
export function mix(version: number, over: Record<string, unknown> = {}): MixState {
  const quota = (level: number, threshold: number) => ({
    share: 0.25,
    quota: 10,
    upsample: 1,
    level,
    threshold,
    damp: 1,
  });
  return MixState.parse({
    version,
    at: new Date(0).toISOString(),
    reason: 'test',
    alpha: 0.5,
    seed: 7,
    repeatCap: 2,
    taxonomy: { name: 'mesh-biology', meshYear: 2024 },
    reference: { name: 'test', counts: {}, unknown: [] },
    heldOut: { topics: ['Botany'], publishedFrom: null, sources: [] },
    observed: {},
    target: {},
    quotas: { Genetics: quota(2, 0.5), Ecology: quota(1, 0.7), Microbiology: quota(1, 1) },
    starving: [],
    metrics: {
      items: 0,
      heldOut: 0,
      size: 0,
      distinct: 0,
      maxMinRatio: 0,
      averageUpsample: 0,
      yield: 0,
      tvdReference: 0,
      tvdTarget: 0,
      jsTarget: 0,
      kept: null,
    },
    ...over,
  });
}

/** A classified QA record as it travels on qa.classified. */
export function classifiedQa(i: number, topics: string[]): Record<string, unknown> {
  return {
    candidate: {
      id: `cq-${i}`,
      articleId: `doi:10.1000/${i}`,
      passage: { sectionIndex: 0, start: 0, end: 5, text: 'Text.' },
      kind: 'multiple-choice',
      question: `Which ${i}?`,
      options: ['one', 'two', 'three', 'four'],
      answer: 'B',
      provenance: { articleId: `doi:10.1000/${i}`, source: 'jats', licence: 'CC BY 4.0', published: '2021' },
      generatedBy: { model: 'm', promptVersion: 'v1' },
    },
    grade: {
      scores: { quality: 0.9, difficulty: 0.4, answerability: 1, verifiability: 1 },
      verdict: 'accept',
      reasons: [],
      gradedBy: { model: 'm', promptVersion: 'v1' },
    },
    classification: {
      labels: topics.map((category) => ({ category, confidence: 0.9 })),
      meshLabels: [],
      taxonomy: { name: 'mesh-biology', meshYear: 2024 },
      classifiedBy: { model: 'm', promptVersion: 'v1' },
    },
  };
}

/** The copies of an item in the feeder's training pool: none for any QA of a held-out article. */
export function trainCopies(items: readonly PoolItem[], m: MixState): (item: PoolItem) => number {
  const held = heldOutArticles(items, m.heldOut);
  return (item) => (held.has(item.articleId) ? 0 : copiesOf(m, item));
}
