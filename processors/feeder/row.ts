import { acceptedForms } from '../../reward/index.js';
import type { PromptTemplates } from '../../schemas/feeder.js';
import type { ClassifiedQa } from '../../schemas/qa.js';
import type { ChatMessage, GroundTruth, RolloutItem } from '../../schemas/rollout-batch.js';

/** What the feeder and the exports keep of a classified QA: enough to select it and to render its row. */
export interface PoolItem {
  readonly id: string;
  readonly articleId: string;
  readonly kind: 'mcq' | 'free-form';
  readonly question: string;
  readonly options: readonly string[];
  /** The option letter (MCQ) or the short canonical answer. */
  readonly answer: string;
  readonly topics: readonly string[];
  readonly source: string;
  readonly published: string | null;
  readonly grade: { quality: number; difficulty: number; answerability: number; verifiability: number };
}

export function poolItem(qa: ClassifiedQa): PoolItem {
  const c = qa.candidate;
  return {
    id: c.id,
    articleId: c.articleId,
    kind: c.kind === 'multiple-choice' ? 'mcq' : 'free-form',
    question: c.question,
    options: c.kind === 'multiple-choice' ? c.options : [],
    answer: c.answer,
    topics: [...new Set(qa.classification.labels.map((l) => l.category))],
    source: c.provenance.source,
    published: c.provenance.published ?? null,
    grade: { ...qa.grade.scores },
  };
}

const LETTERS = 'ABCDEFGHIJ';

/** The chat messages of an item from the per-kind template. */
export function promptOf(item: PoolItem, templates: PromptTemplates): ChatMessage[] {
  const options = item.options.map((o, i) => `${LETTERS[i]}) ${o}`).join('\n');
  const template = item.kind === 'mcq' ? templates.mcq : templates.freeForm;
  // One pass, so a question containing "{options}" is not expanded again.
  const content = template.replace(/\{(question|options)\}/g, (_m, name: string) =>
    name === 'question' ? item.question : options,
  );
  return [
    ...(templates.system === null ? [] : [{ role: 'system' as const, content: templates.system }]),
    { role: 'user', content },
  ];
}

/**
 * An item's ground truth as rows carry it. Aliases: the right option's text (MCQ), or the other
 * forms the reward accepts for a free-form answer ("deoxyribonucleic acid (DNA)" gives both sides).
 */
export function groundTruthOf(item: PoolItem): GroundTruth {
  const aliases =
    item.kind === 'mcq'
      ? item.options.filter((_, i) => LETTERS[i] === item.answer)
      : acceptedForms(item.answer, []).filter((f) => f !== item.answer.trim());
  return { answer: item.answer, kind: item.kind, options: [...item.options], aliases };
}

export interface RowSettings {
  readonly templates: PromptTemplates;
  readonly dataSource: string;
  readonly ability: string;
}

/** The superset row (verl, TRL, datasets) of one copy of an item. */
export function rolloutRow(
  item: PoolItem,
  settings: RowSettings,
  at: { index: number; split: 'train' | 'heldout'; copy: number },
): RolloutItem {
  const groundTruth = groundTruthOf(item);
  return {
    data_source: settings.dataSource,
    prompt: promptOf(item, settings.templates),
    ability: settings.ability,
    reward_model: { style: 'rule', ground_truth: groundTruth },
    ground_truth: groundTruth,
    answer: item.answer,
    solution: `Answer: ${item.answer}`,
    extra_info: {
      index: at.index,
      split: at.split,
      qa_id: item.id,
      article_id: item.articleId,
      topics: [...item.topics],
      kind: item.kind,
      options: [...item.options],
      grade: { ...item.grade },
      copy: at.copy,
    },
  };
}
