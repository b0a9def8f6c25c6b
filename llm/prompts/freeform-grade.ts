import type { LlmMessage } from '../../schemas/llm.js';
import type { GradeAccept } from '../../schemas/qa.js';
import { DATA_RULE, dataBlock, QA_RULE } from './data-block.js';
import { scoringRules } from './judge.js';

/** Free-form grading: the judge sees the passage, the question and the short answer. */
export const FREEFORM_GRADE_PROMPT = 'freeform-grade-v4';

export function freeformGradeMessages(
  passage: string,
  accept: GradeAccept,
  q: { question: string; answer: string },
): LlmMessage[] {
  return [
    {
      role: 'system',
      content: [
        'You review free-form question and answer pairs written from biology research passages, before they are used to train a reasoning model whose answers are checked by string match.',
        'Check that the answer is correct according to the passage, short and canonical (a term, a name, a number with unit), and the only reasonable answer to the question.',
        scoringRules(accept),
        DATA_RULE,
        QA_RULE,
        'Reply with JSON: {"quality": n, "difficulty": n, "answerability": n, "verifiability": n, "verdict": "accept"|"reject", "reasons": ["..."]}.',
      ].join('\n'),
    },
    {
      role: 'user',
      content: `${dataBlock(passage)}\n\n${dataBlock(`Question: ${q.question}\nAnswer: ${q.answer}`, 'QA_PAIR')}`,
    },
  ];
}
