import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { replyJsonSchema } from '../../llm/json-schema.js';
import { drawLatency, meanLatency } from './latency.js';
import { seeded } from './random.js';
import { objectForSchema } from './schema-object.js';
import { start } from './server.js';

const Node = z.object({
  label: z.string(),
  get children() {
    return z.array(Node).max(2);
  },
});

const schemas = {
  flat: z.object({ relevant: z.boolean(), reason: z.string().min(5).max(30) }),
  mcq: z.object({
    question: z.string().min(20),
    options: z.array(z.string()).length(4),
    answer: z.enum(['A', 'B', 'C', 'D']),
    score: z.number().min(0).max(1),
    difficulty: z.int().min(1).max(5),
  }),
  nested: z.object({
    labels: z
      .array(z.object({ topic: z.string(), confidence: z.number().gt(0).lt(1) }))
      .min(1)
      .max(3),
    note: z.string().nullable(),
    kind: z.literal('graded'),
    verdict: z.union([z.literal('accept'), z.literal('reject')]),
    when: z.iso.datetime(),
  }),
  recursive: Node,
};

describe('schema-valid objects', () => {
  it.each(Object.entries(schemas))('builds a valid %s value, the same for the same seed', (_, schema) => {
    const json = replyJsonSchema(schema);
    for (let seed = 0; seed < 50; seed++) {
      const value = objectForSchema(json, seeded(seed));
      expect(schema.safeParse(value).error).toBeUndefined();
      expect(objectForSchema(json, seeded(seed))).toEqual(value);
    }
  });
});

describe('latency', () => {
  it('draws log-normal delays with the asked median and p99', () => {
    const random = seeded(3);
    const latency = { kind: 'lognormal' as const, medianMs: 200, p99Ms: 2000 };
    const xs = Array.from({ length: 20_000 }, () => drawLatency(latency, random)).sort((a, b) => a - b);
    expect(xs[10_000]!).toBeGreaterThan(190);
    expect(xs[10_000]!).toBeLessThan(210);
    expect(xs[19_800]!).toBeGreaterThan(1800);
    expect(xs[19_800]!).toBeLessThan(2200);
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(Math.abs(mean / meanLatency(latency) - 1)).toBeLessThan(0.05);
  });
});

describe('server', () => {
  const body = {
    model: 'm',
    messages: [{ role: 'user' as const, content: 'hi' }],
    response_format: {
      type: 'json_schema' as const,
      json_schema: { name: 'flat', schema: replyJsonSchema(schemas.flat), strict: true },
    },
  };

  it('answers the same prompt the same way, counting it by hash', async () => {
    const server = await start();
    const client = new OpenAI({ baseURL: server.url, apiKey: 'x', maxRetries: 0 });
    const a = await client.chat.completions.create(body);
    const b = await client.chat.completions.create(body);
    expect(schemas.flat.parse(JSON.parse(a.choices[0]!.message.content!))).toBeDefined();
    expect(b.choices[0]!.message.content).toBe(a.choices[0]!.message.content);
    expect(Object.values(server.stats().byPromptHash)).toEqual([2]);
    await server.stop();
  });

  it('plays a scripted fault sequence, then a seeded rate', async () => {
    const server = await start({
      faults: {
        sequence: ['rate-limit', 'server-error', 'reset', null, 'truncated', 'schema-break'],
        retryAfterSeconds: 3,
      },
    });
    const client = new OpenAI({ baseURL: server.url, apiKey: 'x', maxRetries: 0 });
    const outcome = () =>
      client.chat.completions.create(body).then(
        (c) => `${c.choices[0]!.finish_reason}:${c.choices[0]!.message.content!.slice(0, 3)}`,
        (e: InstanceType<typeof OpenAI.APIError>) =>
          `${e.constructor.name}:${e.headers?.get('retry-after') ?? ''}`,
      );
    const seen: string[] = [];
    for (let i = 0; i < 6; i++) seen.push(await outcome());
    expect(seen).toEqual([
      'RateLimitError:3',
      'InternalServerError:',
      'APIConnectionError:',
      'stop:{"r',
      'length:{"r',
      'stop:{"_',
    ]);

    server.setFaults({ rate: 0.5, kinds: ['server-error'] });
    for (let i = 0; i < 200; i++) await outcome();
    expect(server.stats().byFault['server-error']).toBeGreaterThan(70);
    expect(server.stats().byFault['server-error']).toBeLessThan(130);
    await server.stop();
  });

  it('holds a timeout-faulted request until the client gives up', async () => {
    const server = await start({ faults: { sequence: ['timeout'] } });
    const client = new OpenAI({ baseURL: server.url, apiKey: 'x', maxRetries: 0, timeout: 200 });
    await expect(client.chat.completions.create(body)).rejects.toBeInstanceOf(
      OpenAI.APIConnectionTimeoutError,
    );
    await server.stop();
  });

  it('runs as its own process with its counts over HTTP', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/llm-server/main.ts', '--port', '0'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const [url] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
      const client = new OpenAI({ baseURL: url, apiKey: 'x', maxRetries: 0 });
      await client.chat.completions.create(body);
      const root = url.replace(/\/v1$/, '');
      await fetch(`${root}/control`, {
        method: 'POST',
        body: JSON.stringify({ faults: { sequence: ['server-error'] } }),
      });
      await expect(client.chat.completions.create(body)).rejects.toBeInstanceOf(OpenAI.InternalServerError);
      const stats = await (await fetch(`${root}/stats`)).json();
      expect(stats).toMatchObject({ requests: 2, answered: 1, byFault: { 'server-error': 1 } });
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  });
});
