import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TransientError } from '../../llm/errors.js';
import { OpenAiProvider } from '../../llm/providers/openai.js';

// An endpoint on its own thread, so that it answers while this thread's loop is busy. It says
// when a request arrived, then answers after the ms its path starts with, or never for -1.
const ENDPOINT = `
const http = require('node:http');
const { parentPort } = require('node:worker_threads');
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    parentPort.postMessage('request');
    const delay = Number(req.url.split('/')[1]);
    if (delay < 0) return;
    setTimeout(() => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({
        id: 'c1', object: 'chat.completion', created: 0, model: 'm',
        choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: '{"ok":true}' } }],
        usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
      }));
    }, delay);
  });
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
parentPort.on('message', () => server.close(() => process.exit(0)));
`;

const request = (timeoutMs: number) => ({
  model: 'm',
  messages: [{ role: 'user' as const, content: 'hi' }],
  schema: { name: 's', schema: { type: 'object' } },
  temperature: 0,
  maxTokens: 10,
  timeoutMs,
});

/** Blocks this thread's event loop, as a long synchronous step would. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('the OpenAI-compatible provider', () => {
  let worker: Worker;
  let port: number;
  beforeAll(async () => {
    worker = new Worker(ENDPOINT, { eval: true });
    [port] = await once(worker, 'message');
  });
  afterAll(async () => {
    worker.postMessage('stop');
    await once(worker, 'exit');
  });
  const provider = (delay: number) => new OpenAiProvider(`http://127.0.0.1:${port}/${delay}`, 'k');

  it('takes a reply that arrived while its loop was busy past the timeout, instead of paying for it again', async () => {
    const p = provider(20);
    const reply = p.chat(request(150));
    await once(worker, 'message'); // the request is at the endpoint
    // The reply arrives 20 ms in and the timeout passes at 150 ms, both while this loop is busy.
    busy(400);
    expect(await reply).toMatchObject({ content: '{"ok":true}', usage: { inputTokens: 3, outputTokens: 2 } });
    await p.close();
  });

  it('times out an endpoint that stays silent', async () => {
    const p = provider(-1);
    const reply = p.chat(request(100));
    await once(worker, 'message');
    const error = await reply.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransientError);
    expect((error as TransientError).reason).toBe('timeout');
    await p.close();
  });
});
