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
