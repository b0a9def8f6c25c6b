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
  rationale: z.string().default(''),
  provenance: Provenance,
  generatedBy: ModelStamp,
});

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
export const Grade = z.object({
  scores: z.object({
    quality: Score,
    difficulty: Score,
    answerability: Score,
    verifiability: Score,
  }),
  verdict: z.enum(['accept', 'reject']),
  reasons: z.array(z.string()),
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
  labels: z.array(TopicLabel).min(1).describe('multi-label, a subset of the taxonomy'),
  meshLabels: z
    .array(z.string())
    .describe("categories reached from the article's MeSH headings: a partial signal, no LLM"),
  taxonomy: z.object({ name: z.string(), meshYear: z.number().int() }),
  classifiedBy: ModelStamp,
});
export type Classification = z.infer<typeof Classification>;

export const ClassifiedQa = GradedQa.extend({ classification: Classification });
export type ClassifiedQa = z.infer<typeof ClassifiedQa>;
