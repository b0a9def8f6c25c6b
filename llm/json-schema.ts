import { z } from 'zod';

const converted = new WeakMap<z.ZodType, Record<string, unknown>>();

/**
 * A stage's zod schema as the JSON Schema sent with the request (OpenAI structured outputs, or the
 * local grammar), converted once per schema. The `$schema` marker is dropped: strict endpoints and
 * grammar builders reject keywords they do not know. For OpenAI's strict mode every property must
 * be required: give stages `.nullable()` fields rather than `.optional()` ones.
 */
export function replyJsonSchema(schema: z.ZodType): Record<string, unknown> {
  let json = converted.get(schema);
  if (!json) {
    const { $schema: _, ...rest } = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' });
    json = rest;
    converted.set(schema, json);
  }
  return json;
}

/**
 * A reply string bounded where it is decoded, not where it is read. The schema sent carries
 * `maxLength`, so a server that decodes under a grammar made of it (llama.cpp, llama-cpp-python,
 * vLLM, Ollama) ends the string there: a small model repeating itself inside one would otherwise run
 * to max_tokens, minutes a reply on a CPU. A longer string from a server that does not bound it
 * (OpenAI's strict mode takes no lengths: Dialect.stringLengths) is read as it is, and what reads it
 * judges it (grade's length checks are the same bounds).
 */
export const boundedString = (maxLength: number) => z.string().meta({ maxLength });
