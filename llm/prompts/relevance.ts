import { z } from 'zod';
import type { LlmMessage } from '../../schemas/llm.js';
import { boundedString } from '../json-schema.js';
import { articleBlock, DATA_RULE, REASON_CHARS } from './data-block.js';

/** Passage relevance: does this passage hold findings a verifiable biology question can test? */
export const RELEVANCE_PROMPT = 'relevance-v3';

export const RelevanceReply = z
  .object({
    relevant: z.boolean(),
    reason: boundedString(REASON_CHARS).describe('one short sentence'),
  })
  .strict();
export type RelevanceReply = z.infer<typeof RelevanceReply>;

export function relevanceMessages(title: string, passage: string): LlmMessage[] {
  return [
    {
      role: 'system',
      content: [
        'You screen passages of biology research articles for a question-writing team.',
        'A passage is relevant when it states concrete scientific content (a result, a mechanism, a measured quantity, a defined biological concept) from which a self-contained question with one checkable answer can be written.',
        'It is not relevant when it is only acknowledgements, funding, author contributions, references, licence text, data-availability boilerplate, or too vague to test.',
        DATA_RULE,
        'Reply with JSON: {"relevant": true|false, "reason": "<one short sentence>"}.',
      ].join('\n'),
    },
    { role: 'user', content: articleBlock(title, passage) },
  ];
}
