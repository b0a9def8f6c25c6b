import { z } from 'zod';
import type { LlmJournalReply, LlmMessage } from '../schemas/llm.js';

export type Checked<T> = { ok: true; value: T } | { ok: false; reason: string };

/** A reply's content parsed and validated; never throws, whatever the model sent. */
export function checkReply<S extends z.ZodType>(reply: LlmJournalReply, schema: S): Checked<z.output<S>> {
  let json: unknown;
  try {
    json = JSON.parse(unfenced(reply.content));
  } catch (e) {
    const cut = reply.truncated ? ' (the reply was cut off at maxTokens)' : '';
    return { ok: false, reason: `not valid JSON${cut}: ${(e as Error).message}` };
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return { ok: true, value: parsed.data };
  return {
    ok: false,
    reason: `does not match the schema: ${z.prettifyError(parsed.error).replaceAll('\n', ' ')}`,
  };
}

/**
 * A model without a grammar often wraps its JSON in a Markdown code fence (or a byte-order mark):
 * the JSON inside is its reply. Anything else is left for JSON.parse to judge.
 */
function unfenced(content: string): string {
  const trimmed = content.trim();
  return trimmed.match(/^```(?:json)?[ \t]*\n([\s\S]*?)\n?```$/i)?.[1] ?? trimmed;
}

/** The conversation that asks the model to fix its reply, carrying what was wrong with it. */
export function repairMessages(messages: LlmMessage[], raw: string, reason: string): LlmMessage[] {
  return [
    ...messages,
    { role: 'assistant', content: raw },
    {
      role: 'user',
      content: `That reply is ${reason}. Reply again with only the JSON object, matching the schema exactly.`,
    },
  ];
}
