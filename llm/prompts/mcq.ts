import { z } from 'zod';
import type { LlmMessage } from '../../schemas/llm.js';
import { QA_LIMITS } from '../../schemas/qa.js';
import { boundedString } from '../json-schema.js';
import { articleBlock, DATA_RULE, QUESTION_RULES, RATIONALE_CHARS } from './data-block.js';

/** Multiple-choice generation: up to three questions, four or five options, one key. */
export const MCQ_PROMPT = 'mcq-v4';

/** The key as models write it: "B", "(B)", "Option B" (extract's optionLetter reads each). */
const ANSWER_LETTER_CHARS = 12;

export const McqReply = z
  .object({
    questions: z
      .array(
        z
          .object({
            question: boundedString(QA_LIMITS.question.max),
            options: z
              .array(boundedString(QA_LIMITS.option.max))
              .describe('4 or 5 options, each different, exactly one correct'),
            answer: boundedString(ANSWER_LETTER_CHARS).describe(
              'the letter of the correct option: A, B, C, D or E',
            ),
            rationale: boundedString(RATIONALE_CHARS).describe(
              'why the key is right, from the text, in one or two sentences',
            ),
          })
          .strict(),
      )
      .max(3),
  })
  .strict();
export type McqReply = z.infer<typeof McqReply>;

export function mcqMessages(title: string, passage: string): LlmMessage[] {
  return [
    {
      role: 'system',
      content: [
        'You write multiple-choice questions that test understanding of biology research, for training a reasoning model.',
        'From the passage, write up to three questions (none if nothing fits). Each has 4 or 5 options of similar length and style, exactly one of them correct according to the text; the wrong options are plausible to a non-expert but clearly wrong to an expert.',
        'Do not use "all of the above", "none of the above" or "both A and B". Do not copy the correct option into the question.',
        `Rules:\n- ${QUESTION_RULES}`,
        DATA_RULE,
        'Reply with JSON: {"questions": [{"question": "<a self-contained question about the text>", "options": ["<first option>", "<second option>", "<third option>", "<fourth option>"], "answer": "<the correct letter>", "rationale": "<why, from the text>"}]}. Replace every <...> with your own words.',
      ].join('\n'),
    },
    { role: 'user', content: articleBlock(title, passage) },
  ];
}
