import OpenAI from 'openai';
import { TransientError } from '../errors.js';
import { type HttpFetch, httpFetch } from './http-fetch.js';
import type { Provider, ProviderRequest } from './provider.js';

/** An OpenAI-compatible chat completions endpoint, through the `openai` client. */
export class OpenAiProvider implements Provider {
  private readonly client: OpenAI;
  private readonly http: HttpFetch = httpFetch();

  constructor(
    baseUrl: string | undefined,
    private readonly apiKey: string,
  ) {
    // maxRetries 0: the client's own retries would hide failures from the circuit and the accounting.
    // Requests go over pooled node:http connections, not the built-in fetch: about half the CPU.
    this.client = new OpenAI({ baseURL: baseUrl, apiKey, maxRetries: 0, fetch: this.http.fetch });
  }

  async chat(request: ProviderRequest) {
    let completion: OpenAI.Chat.Completions.ChatCompletion;
    try {
      completion = await this.client.chat.completions.create(
        {
          model: request.model,
          messages: request.messages,
          temperature: request.temperature,
          max_completion_tokens: request.maxTokens,
          response_format: {
            type: 'json_schema',
            json_schema: { name: request.schema.name, schema: request.schema.schema, strict: true },
          },
        },
        // The signal aborts a call in flight when the process stops (the reply is then not paid).
        { timeout: request.timeoutMs, ...(request.signal ? { signal: request.signal } : {}) },
      );
    } catch (e) {
      // Endpoints quote the key they were sent in their error bodies ("Incorrect API key provided:
      // sk-…"); what is thrown becomes log lines and dead-letter reasons, so the key leaves it here.
      throw withoutSecret(transient(e) ?? e, this.apiKey);
    }
    const choice = completion.choices[0];
    return {
      content: choice?.message.content ?? '',
      model: completion.model,
      usage: {
        inputTokens: completion.usage?.prompt_tokens ?? 0,
        outputTokens: completion.usage?.completion_tokens ?? 0,
      },
      truncated: choice?.finish_reason === 'length',
    };
  }

  async close(): Promise<void> {
    this.http.close();
  }
}

/** The error with every occurrence of the secret in its message, stack and body replaced. */
export function withoutSecret(e: unknown, secret: string): unknown {
  if (!(e instanceof Error) || secret.length < 4) return e;
  const clean = (s: string) => s.split(secret).join('[redacted]');
  if (e.message.includes(secret)) e.message = clean(e.message);
  if (e.stack?.includes(secret)) e.stack = clean(e.stack);
  const body = e as Error & { error?: unknown };
  if (body.error !== undefined && JSON.stringify(body.error)?.includes(secret))
    body.error = JSON.parse(clean(JSON.stringify(body.error)));
  return e;
}

function transient(e: unknown): TransientError | undefined {
  if (e instanceof OpenAI.APIConnectionTimeoutError) return new TransientError('timeout', e.message);
  if (e instanceof OpenAI.APIConnectionError) return new TransientError('connection', e.message);
  if (!(e instanceof OpenAI.APIError) || e.status === undefined) return undefined;
  if (e.status === 429) return new TransientError('rate-limit', e.message, retryAfterMs(e.headers), 429);
  if (e.status >= 500 || e.status === 408 || e.status === 409) {
    return new TransientError(
      e.status === 408 ? 'timeout' : 'server-error',
      e.message,
      retryAfterMs(e.headers),
      e.status,
    );
  }
  return undefined;
}

/** Retry-After in seconds or as an HTTP date, or OpenAI's retry-after-ms. */
function retryAfterMs(headers: Headers | undefined): number | undefined {
  const ms = Number(headers?.get('retry-after-ms'));
  if (ms > 0) return ms;
  const value = headers?.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
