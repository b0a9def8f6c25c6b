import type { LlmMessage } from '../../schemas/llm.js';
import type { GradeAccept } from '../../schemas/qa.js';
import { DATA_RULE, dataBlock, QA_RULE } from './data-block.js';
import { scoringRules } from './judge.js';

/** Multiple-choice quality evaluation: the judge sees the passage, the question and its key. */
export const MCQ_QUALITY_PROMPT = 'mcq-quality-v4';

export function mcqQualityMessages(
  passage: string,
  accept: GradeAccept,
  q: { question: string; options: readonly string[]; answer: string },
): LlmMessage[] {
  const options = q.options.map((o, i) => `${String.fromCharCode(65 + i)}. ${o}`).join('\n');
  return [
    {
      role: 'system',
      content: [
        'You review multiple-choice questions written from biology research passages, before they are used to train a reasoning model.',
        'Check that exactly one option is correct according to the passage, that the marked key is that option, and that the wrong options are wrong.',
        scoringRules(accept),
        DATA_RULE,
        QA_RULE,
        'Reply with JSON: {"quality": n, "difficulty": n, "answerability": n, "verifiability": n, "verdict": "accept"|"reject", "reasons": ["..."]}.',
      ].join('\n'),
    },
    {
      role: 'user',
      content: `${dataBlock(passage)}\n\n${dataBlock(`Question: ${q.question}\n${options}\nMarked key: ${q.answer}`, 'QA_PAIR')}`,
    },
  ];
}
