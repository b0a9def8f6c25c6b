import { z } from 'zod';
import type { LlmMessage } from '../../schemas/llm.js';
import { articleBlock, DATA_RULE, QUESTION_RULES } from './data-block.js';

/** Multiple-choice generation: up to three questions, four or five options, one key. */
export const MCQ_PROMPT = 'mcq-v3';

export const McqReply = z
  .object({
    questions: z
      .array(
        z
          .object({
            question: z.string(),
            options: z.array(z.string()).describe('4 or 5 options, each different, exactly one correct'),
            answer: z.string().describe('the letter of the correct option: A, B, C, D or E'),
            rationale: z.string().describe('why the key is right, from the text, in one or two sentences'),
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
