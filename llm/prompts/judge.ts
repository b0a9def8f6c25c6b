import { z } from 'zod';

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
    reasons: z.array(z.string()).max(4).describe('short reasons, above all for a rejection'),
  })
  .strict();
export type JudgeReply = z.infer<typeof JudgeReply>;

export const SCORING = [
  'Score each from 1 to 5:',
  '- quality: the question is clear, correct according to the text, and worth asking a biologist;',
  '- difficulty: 1 is recall of a word in the text, 5 needs expert reasoning;',
  '- answerability: a biologist can answer it without the article (it is self-contained, names what it asks about);',
  '- verifiability: the key is unambiguous and can be checked exactly.',
  'Reject when quality, answerability or verifiability is below 3, or the key is wrong.',
].join('\n');
