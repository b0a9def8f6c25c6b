import { z } from 'zod';
import { ModelStamp, Provenance } from './provenance.js';

export const PassageSpan = z.object({
  sectionIndex: z.number().int().min(-1).describe('-1 is the abstract'),
  start: z.number().int().nonnegative().describe('character offset into the section text'),
  end: z.number().int().nonnegative(),
  text: z.string(),
});
export type PassageSpan = z.infer<typeof PassageSpan>;

const QaBase = z.object({
  id: z.string().min(1).describe('contentHash(articleId, passage text, question)'),
  articleId: z.string().min(1),
  passage: PassageSpan,
  question: z.string().min(1),
  articleTitle: z
    .string()
    .default('')
    .describe("the article's title, so grade can tell a question that only copies it; '' on older records"),
  rationale: z.string().default(''),
  provenance: Provenance,
  generatedBy: ModelStamp,
});

/**
 * Bounds on a question's lengths, in characters and words (grade's checks); the paper's answers are
 * short and canonical. The extraction prompts' reply schemas bound decoding at the same lengths.
 */
export const QA_LIMITS = {
  question: { min: 20, max: 1000 },
  option: { max: 300 },
  freeFormAnswer: { maxChars: 120, maxWords: 15 },
} as const;

export const QaCandidate = z.discriminatedUnion('kind', [
  QaBase.extend({
    kind: z.literal('multiple-choice'),
    options: z.array(z.string().min(1)).min(2).max(10),
    answer: z.string().regex(/^[A-J]$/, 'a multiple-choice answer is one option letter'),
  }),
  QaBase.extend({
    kind: z.literal('free-form'),
    answer: z.string().min(1).max(200, 'a free-form answer is short and canonical'),
  }),
]);
export type QaCandidate = z.infer<typeof QaCandidate>;

export const Score = z.number().min(0).max(1);

/**
 * Why grade refused a QA, one stable code per rule it failed (what /metrics and the run summary
 * count by); the human reasons stand beside them. processors/grade.ts and processors/qa/checks.ts
 * apply the rules.
 */
export const RejectionCode = z.enum([
  // Deterministic checks (processors/qa/checks.ts), before any judge call:
  'question-length', // the question is too short or too long to be a question
  'self-contained', // the question points outside itself ("in this study", "Figure 2")
  'not-english',
  'copied-text', // the question is the article's title or a sentence of the passage, copied
  'not-a-question', // no interrogative form
  'yes-no-answer', // a free-form answer a coin flip gets right (yes/no, true/false)
  'answer-length', // a free-form answer too long to be checked by string match
  'answer-in-question', // the answer (or the key's option) is written in the question
  'option-count', // a multiple-choice item without 4 or 5 options
  'duplicate-options', // two options say the same
  'option-length',
  'answer-key', // the key is no option
  'ambiguous-option', // "all/none/both of the above" makes more than one key possible
  'unverifiable-answer', // the reward cannot pay the reference's own canonical forms (reward/score.ts)
  'prompt-marker', // the QA carries the prompt's own data-block markers (<<<ARTICLE_TEXT ...)
  // The judge's scores against grade.accept:
  'low-quality',
  'low-answerability',
  'low-verifiability',
  'low-difficulty',
  'judge-inconsistent', // the verdict contradicts the scores (either way)
  // Duplicates (grade's dedup store):
  'duplicate', // the same question (normalised) as an earlier one, or the same candidate again
  'near-duplicate',
  // Eval sets (grade.evalSets, processors/qa/decontaminate.ts):
  'contaminated', // shares a word 13-gram with an eval item's question+options, or near-duplicates its question
  'eval-source', // the article is an eval item's source (its PMID or DOI)
]);
export type RejectionCode = z.infer<typeof RejectionCode>;

const MIN_SCORE = "an integer from 1 to 5, on the judge's scale";
const MinScore = z.number(MIN_SCORE).int(MIN_SCORE).min(1, MIN_SCORE).max(5, MIN_SCORE);

/**
 * What grade accepts: the least of each judge score (1-5). The judge's prompt states the same
 * numbers (llm/prompts/judge.ts acceptRule), and grade applies them to the scores whatever the
 * judge's verdict. A minimum of 1 is no rule.
 */
export const GradeAccept = z
  .object({
    quality: MinScore.default(3),
    answerability: MinScore.default(3),
    verifiability: MinScore.default(3),
    difficulty: MinScore.nullable().default(null).describe('none by default: easy items are kept'),
  })
  .strict();
export type GradeAccept = z.infer<typeof GradeAccept>;

/** The eval item a rejected candidate matched (codes `contaminated` and `eval-source`). */
export const EvalMatch = z.object({
  code: z.enum(['contaminated', 'eval-source']),
  evalSet: z.string().min(1).describe("the eval set's name: its file's base name"),
  itemId: z.string().min(1),
  how: z.enum(['13-gram', 'near-duplicate', 'pmid', 'doi']),
  evidence: z.string().describe('the shared 13-gram, the similarity, or the source id'),
});
export type EvalMatch = z.infer<typeof EvalMatch>;

export const Grade = z.object({
  scores: z.object({
    quality: Score,
    difficulty: Score,
    answerability: Score,
    verifiability: Score,
  }),
  verdict: z.enum(['accept', 'reject']),
  reasons: z.array(z.string()),
  codes: z
    .array(RejectionCode)
    .default([])
    .describe('a rejection: one code per rule it failed; an acceptance: none'),
  duplicateOf: z.string().optional().describe('a duplicate: the id of the QA it repeats'),
  evalMatches: z
    .array(EvalMatch)
    .optional()
    .describe('contaminated / eval-source: the eval items matched, at most one per code and set'),
  gradedBy: ModelStamp,
});
export type Grade = z.infer<typeof Grade>;

export const GradedQa = z.object({ candidate: QaCandidate, grade: Grade });
export type GradedQa = z.infer<typeof GradedQa>;

export const TopicLabel = z.object({
  category: z.string().min(1).describe('taxonomy category id'),
  confidence: z.number().min(0).max(1),
});

export const Classification = z.object({
  labels: z
    .array(TopicLabel)
    .describe(
      'multi-label, a subset of the taxonomy; empty when no label reached classify.minConfidence (counted as unlabelled)',
    ),
  meshLabels: z
    .array(z.string())
    .describe("categories reached from the article's MeSH headings: a partial signal, no LLM"),
  taxonomy: z.object({ name: z.string(), meshYear: z.number().int() }),
  classifiedBy: ModelStamp,
});
export type Classification = z.infer<typeof Classification>;

export const ClassifiedQa = GradedQa.extend({ classification: Classification });
export type ClassifiedQa = z.infer<typeof ClassifiedQa>;
