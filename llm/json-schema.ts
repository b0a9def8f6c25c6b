import { z } from 'zod';

/**
 * A stage's zod schema as the JSON Schema sent with the request (OpenAI structured outputs, or the
 * local grammar). The `$schema` marker is dropped: strict endpoints and grammar builders reject
 * keywords they do not know. For OpenAI's strict mode every property must be required: give stages
 * `.nullable()` fields rather than `.optional()` ones.
 */
export function replyJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' });
  return rest;
}
