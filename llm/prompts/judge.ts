import { z } from 'zod';
import type { GradeAccept } from '../../schemas/qa.js';
import { boundedString } from '../json-schema.js';
import { REASON_CHARS } from './data-block.js';

/**
 * What the two judges (multiple-choice quality evaluation, free-form grading) reply: four scores
 * on a 1-5 scale (small models keep to a short integer scale better than to fractions), a verdict
 * and its reasons. The grade stage maps scores to 0-1.
 */
export const JudgeReply = z
  .object({
    quality: z.number().int().min(1).max(5).describe('clear, correct, worth asking'),
    difficulty: z.number().int().min(1).max(5).describe('1 trivial, 5 needs expert reasoning'),
    answerability: z.number().int().min(1).max(5).describe('answerable without the article'),
    verifiability: z.number().int().min(1).max(5).describe('the answer can be checked exactly'),
    verdict: z.enum(['accept', 'reject']),
    reasons: z.array(boundedString(REASON_CHARS)).max(4).describe('short reasons, above all for a rejection'),
  })
  .strict();
export type JudgeReply = z.infer<typeof JudgeReply>;

/** The scores grade.accept bounds, in the order the rule names them. */
export const BOUNDED_SCORES = ['quality', 'answerability', 'verifiability', 'difficulty'] as const;

/**
 * When the judge accepts, worded from grade.accept: the scores grouped by minimum, a minimum of 1
 * (or none) left out since every score meets it. grade applies the same numbers in code.
 */
export function acceptRule(accept: GradeAccept): string {
  const groups = new Map<number, string[]>();
  for (const score of BOUNDED_SCORES) {
    const min = accept[score];
    if (min !== null && min > 1) groups.set(min, [...(groups.get(min) ?? []), score]);
  }
  const list = (names: string[]) =>
    names.length === 1 ? names[0]! : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
  const clauses = [...groups].map(
    ([min, names]) => `${list(names)} ${names.length === 1 ? 'is' : 'are each'} at least ${min}`,
  );
  if (clauses.length === 0) return 'Accept whatever the scores: no minimum is set.';
  if (clauses.length === 1) return `Accept when ${clauses[0]}; otherwise reject.`;
  return `Accept when all of these hold: ${clauses.join('; ')}. Otherwise reject.`;
}

/** How the judge scores and when it accepts. */
export function scoringRules(accept: GradeAccept): string {
  return [
    'Score each from 1 to 5:',
    '- quality: the question is clear, correct according to the text, and worth asking a biologist;',
    '- difficulty: 1 is recall of a word in the text, 5 needs expert reasoning;',
    '- answerability: a biologist can answer it without the article (it is self-contained, names what it asks about);',
    '- verifiability: the key is unambiguous and can be checked exactly; a wrong key is 1.',
    `${acceptRule(accept)} The verdict must follow from the scores.`,
  ].join('\n');
}
