import { z } from 'zod';
import type { LlmJournalReply, LlmMessage } from '../schemas/llm.js';

export type Checked<T> = { ok: true; value: T } | { ok: false; reason: string };

/**
 * A reply's content as the model's thinking and its answer. Servers that do not split reasoning
 * out (llama-server `--reasoning-format none`, vLLM without a reasoning parser, gateways) leave
 * it inline before the answer, in `<think>` tags (DeepSeek-R1, Qwen3, QwQ); some templates open the
 * tag in the prompt, so only its end is in the reply. `unfinished`: the thinking never ended.
 */
export function splitThinking(content: string): { thinking: string; answer: string; unfinished: boolean } {
  const text = content.trimStart();
  const close = text.indexOf('</think>');
  if (text.startsWith('<think>') && close < 0)
    return { thinking: text.slice('<think>'.length), answer: '', unfinished: true };
  if (close < 0) return { thinking: '', answer: content, unfinished: false };
  const before = text.slice(0, close);
  // A closing tag inside the answer (a model quoting one) is not thinking: only a leading block is.
  if (!text.startsWith('<think>') && before.includes('{'))
    return { thinking: '', answer: content, unfinished: false };
  return {
    thinking: before.replace(/^<think>/, ''),
    answer: text.slice(close + '</think>'.length),
    unfinished: false,
  };
}

/**
 * The reply stopped at its budget before its answer was whole, and the model had been thinking:
 * everything it wrote was thinking (content null beside reasoning_content, an unfinished
 * `<think>`, hidden reasoning that used it all), or the thinking left too little for the answer.
 * Not an invalid reply, a budget too small for this model: ask again with more, not for a repair
 * (which would think as long again). A model that did not think and was cut off is repaired.
 */
export function cutOffThinking(reply: LlmJournalReply): boolean {
  if (!reply.truncated || reply.refusal) return false;
  const { answer, unfinished } = splitThinking(reply.content);
  return unfinished || answer.trim() === '' || (reply.reasoningTokens ?? 0) > 0;
}

/** A reply's content parsed and validated; never throws, whatever the model sent. */
export function checkReply<S extends z.ZodType>(reply: LlmJournalReply, schema: S): Checked<z.output<S>> {
  let json: unknown;
  try {
    json = JSON.parse(unfenced(splitThinking(reply.content).answer));
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
