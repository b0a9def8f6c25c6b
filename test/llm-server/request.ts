import { z } from 'zod';

/** The part of a chat completions request the server reads; the rest is accepted and ignored. */
export const ChatRequest = z.looseObject({
  model: z.string(),
  messages: z.array(z.looseObject({ role: z.string(), content: z.unknown() })),
  response_format: z
    .looseObject({
      type: z.string(),
      json_schema: z
        .looseObject({ name: z.string(), schema: z.record(z.string(), z.unknown()).optional() })
        .optional(),
    })
    .optional(),
  /** Server-sent events (OpenAI's chat completions streaming), with the usage last if asked. */
  stream: z.boolean().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
});
export type ChatRequest = z.infer<typeof ChatRequest>;
