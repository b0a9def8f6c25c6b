import { z } from 'zod';
import type { LlmMessage } from '../../schemas/llm.js';
import { QA_LIMITS } from '../../schemas/qa.js';
import { boundedString } from '../json-schema.js';
import { articleBlock, DATA_RULE, QUESTION_RULES, RATIONALE_CHARS } from './data-block.js';

/** Free-form QA extraction: questions whose answer is a short canonical string. */
export const FREEFORM_PROMPT = 'freeform-v4';

export const FreeformReply = z
  .object({
    questions: z
      .array(
        z
          .object({
            question: boundedString(QA_LIMITS.question.max),
            answer: boundedString(QA_LIMITS.freeFormAnswer.maxChars).describe(
              'a term, name or number with unit: at most a few words',
            ),
            rationale: boundedString(RATIONALE_CHARS).describe(
              'where the text supports the answer, in one or two sentences',
            ),
          })
          .strict(),
      )
      .max(3),
  })
  .strict();
export type FreeformReply = z.infer<typeof FreeformReply>;

export function freeformMessages(title: string, passage: string): LlmMessage[] {
  return [
    {
      role: 'system',
      content: [
        'You extract question and answer pairs from biology research passages, for training a reasoning model with a verifiable reward.',
        'Write up to three questions (none if nothing fits) whose answer is short and canonical, so that a string match can check it: a gene or protein name, an organism, a process, a number with its unit. No answers of a sentence or more.',
        `Rules:\n- ${QUESTION_RULES}`,
        DATA_RULE,
        'Reply with JSON: {"questions": [{"question": "<a self-contained question about the text>", "answer": "<a term, name or number>", "rationale": "<where the text says so>"}]}. Replace every <...> with your own words.',
      ].join('\n'),
    },
    { role: 'user', content: articleBlock(title, passage) },
  ];
}
