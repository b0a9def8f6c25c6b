import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { z } from 'zod';
import { Dialect, reply as dialectReply, normalized, refusal } from './dialects.js';
import { type FaultKind, FaultPlan, type Faults } from './faults.js';
import { drawLatency, type Latency } from './latency.js';
import { seeded, seededFrom, sha256 } from './random.js';
import { ChatRequest } from './request.js';
import { objectForSchema } from './schema-object.js';

export { ChatRequest } from './request.js';

/** Makes a reply's content. `random` is seeded from the prompt, so equal prompts get equal replies. */
export type Responder = (
  request: ChatRequest,
  context: { promptHash: string; random: () => number },
) => string | Promise<string>;

/** The default: a schema-valid object for json_schema requests, else a line naming the prompt. */
export const schemaResponder: Responder = (request, { promptHash, random }) => {
  const schema = request.response_format?.json_schema?.schema;
  return schema ? JSON.stringify(objectForSchema(schema, random)) : `reply to ${promptHash.slice(0, 12)}`;
};

export interface ServerOptions {
  port?: number;
  host?: string;
  latency?: Latency;
  faults?: z.input<typeof Faults>;
  responder?: Responder;
  /** How the server speaks (dialects.ts): thinking, refusals, refused fields, context. Plain by default. */
  dialect?: z.input<typeof Dialect>;
  /** Seeds latencies and fault draws. */
  seed?: number;
  /**
   * The models served: a request for another is answered 404 as vLLM does ("The model `x` does not
   * exist."). Unset: any model name is served.
   */
  models?: string[];
  /** The one API key accepted (Authorization: Bearer): another is answered 401 as OpenAI does. */
  apiKey?: string;
  /**
   * Decoding slots, as llama-server's `--parallel` (llama-cpp-python has one): a request decodes in
   * a free slot for its latency; the rest wait in arrival order. A request whose client left (timed
   * out, aborted) is decoded to its end all the same, holding its slot: llama.cpp's server does not
   * cancel queued or running tasks of a closed connection (ggml-org/llama.cpp issues #13262 and
   * #24496), nor does llama-cpp-python's, which serves one request at a time under a lock
   * (llama_cpp/server/app.py). Unset: every request decodes at once.
   */
  slots?: number;
  /**
   * Says its slots at `GET /props` as llama-server does (`total_slots`, tools/server/README.md);
   * llama-cpp-python has no such endpoint (404), the default here.
   */
  statesSlots?: boolean;
}

export interface Stats {
  /** Chat completion requests received, faulted ones included. */
  requests: number;
  /** Requests answered 200 with a model reply (truncated and schema-breaking ones included). */
  answered: number;
  byFault: Partial<Record<FaultKind, number>>;
  /** Requests per hash of their messages: more than one for a prompt means it was paid twice. */
  byPromptHash: Record<string, number>;
  /** Replies sent per hash of their messages: more than one means a reply was paid for twice. */
  answeredByPromptHash: Record<string, number>;
  inFlight: number;
  maxInFlight: number;
  /** Sum of the delays applied to answered requests, for the mean latency actually served. */
  latencySumMs: number;
  /** Requests the dialect refused (a field it does not take, over its context), by status. */
  refusedByDialect: Record<string, number>;
  /** Answered requests that set no budget the dialect honours: on a real server, a reply that may run to the end of the context. */
  unbounded: number;
  /** Replies that were the model's refusal. */
  refusals: number;
  /** Requests waiting for a free slot now, and at most. */
  waiting: number;
  maxWaiting: number;
  /** Replies decoded after their client had left (timed out, aborted): a slot's work for nobody. */
  decodedForNobody: number;
  /** Streams the dialect ended with `[DONE]` before their finish_reason (interruptsStreams). */
  cut: number;
  /** Completion tokens of every reply, thinking included, and of that the thinking. */
  completionTokens: number;
  reasoningTokens: number;
}

export interface LlmServer {
  /** Base URL for an OpenAI client: http://127.0.0.1:PORT/v1 */
  url: string;
  stats(): Stats;
  setFaults(faults: z.input<typeof Faults>): void;
  setLatency(latency: Latency): void;
  setResponder(responder: Responder): void;
  setDialect(dialect: z.input<typeof Dialect>): void;
  resetStats(): void;
  stop(): Promise<void>;
}

const emptyStats = (): Stats => ({
  requests: 0,
  answered: 0,
  byFault: {},
  byPromptHash: {},
  answeredByPromptHash: {},
  inFlight: 0,
  maxInFlight: 0,
  waiting: 0,
  maxWaiting: 0,
  decodedForNobody: 0,
  cut: 0,
  latencySumMs: 0,
  refusedByDialect: {},
  unbounded: 0,
  refusals: 0,
  completionTokens: 0,
  reasoningTokens: 0,
});

/**
 * An OpenAI-compatible chat completions server that answers deterministically from the prompt,
 * with configurable latency and faults, counting what it was asked. GET /stats returns the counts;
 * POST /control {faults?, latency?, resetStats?} changes the rest (for a server in another process).
 */
export async function start(options: ServerOptions = {}): Promise<LlmServer> {
  const random = seeded(options.seed ?? 1);
  const plan = new FaultPlan(options.faults ?? {}, random);
  let latency: Latency = options.latency ?? { kind: 'fixed', ms: 0 };
  let responder = options.responder ?? schemaResponder;
  let dialect = Dialect.parse(options.dialect ?? {});
  let stats = emptyStats();
  const sockets = new Set<Socket>();
  const slots = options.slots ? new Slots(options.slots) : undefined;

  const completion = async (req: IncomingMessage, res: ServerResponse) => {
    const parsed = ChatRequest.safeParse(JSON.parse(await body(req)));
    if (!parsed.success) return json(res, 400, { error: { message: z.prettifyError(parsed.error) } });
    const request = parsed.data;
    const promptHash = sha256(JSON.stringify(request.messages));
    stats.requests++;
    // Checked before any fault or reply, as a real server does: a config mistake refuses every input.
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`)
      return json(res, 401, {
        error: {
          message: 'Incorrect API key provided. You can find your API key in your account settings.',
          type: 'invalid_request_error',
          code: 'invalid_api_key',
        },
      });
    if (options.models && !options.models.includes(request.model))
      return json(res, 404, {
        error: {
          message: `The model \`${request.model}\` does not exist.`,
          type: 'NotFoundError',
          code: 404,
        },
      });
    stats.byPromptHash[promptHash] = (stats.byPromptHash[promptHash] ?? 0) + 1;
    const promptTokens = Math.ceil(JSON.stringify(request.messages).length / 4);
    const refused = refusal(dialect, request, promptTokens);
    if (refused?.kind === 'error') {
      stats.refusedByDialect[refused.status] = (stats.refusedByDialect[refused.status] ?? 0) + 1;
      return json(res, refused.status, refused.body);
    }
    const fault = plan.next();
    if (fault) stats.byFault[fault] = (stats.byFault[fault] ?? 0) + 1;
    switch (fault) {
      case 'rate-limit':
        res.setHeader('retry-after', String(plan.retryAfterSeconds));
        return json(res, 429, { error: { message: 'rate limited (test fault)', type: 'rate_limit_error' } });
      case 'server-error':
        return json(res, 500, { error: { message: 'internal error (test fault)' } });
      case 'bad-request':
        return json(res, 400, {
          error: { message: 'bad request (test fault)', type: 'invalid_request_error' },
        });
      case 'timeout':
        return; // Never answered; the client's timeout ends it.
      case 'reset':
        return req.socket.destroy();
      case 'stall':
        if (!request.stream) return; // A whole reply that stalls is never answered.
        break;
      case 'unreadable':
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        return res.end(UNREADABLE_PAGE);
    }
    const delay = drawLatency(latency, random);
    if (slots && !slots.take()) {
      stats.waiting++;
      stats.maxWaiting = Math.max(stats.maxWaiting, stats.waiting);
      await slots.free();
      stats.waiting--;
    }
    stats.inFlight++;
    stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
    const content = await responder(normalized(request), { promptHash, random: seededFrom(promptHash) });
    const reply =
      fault === 'truncated'
        ? content.slice(0, Math.floor(content.length / 2))
        : fault === 'schema-break'
          ? JSON.stringify({ __unexpected__: promptHash.slice(0, 8) })
          : content;
    const outcome = dialectReply(dialect, request, reply, promptHash);
    if (outcome.kind !== 'reply') throw new Error('a dialect reply is a reply');
    const finish = fault === 'truncated' ? 'length' : outcome.finish;
    const id = `chatcmpl-${promptHash.slice(0, 24)}`;
    const usage = {
      prompt_tokens: promptTokens,
      completion_tokens: outcome.completionTokens,
      total_tokens: promptTokens + outcome.completionTokens,
      // OpenAI reports the hidden reasoning it bills; vLLM does not split it out.
      ...(dialect.reasoning?.field === 'hidden'
        ? { completion_tokens_details: { reasoning_tokens: outcome.reasoningTokens } }
        : {}),
    };
    // A client that went away (killed, timed out) has closed its side: the reply could not arrive.
    const gone = () => res.destroyed || req.socket.readableEnded || req.socket.destroyed;
    // Events or one body by the dialect's framing, whatever was asked.
    const framing = dialect.framing;
    const streams = framing === 'events' || (framing === 'as-asked' && request.stream === true);
    let delivered: boolean | 'stalled' | 'cut';
    if (streams) {
      delivered = await streamReply(res, gone, {
        id,
        model: request.model,
        message: outcome.message,
        finish,
        usage: request.stream_options?.include_usage && !dialect.streamsNoUsage ? usage : undefined,
        delayMs: delay,
        stall: fault === 'stall',
        // llama-cpp-python's test after each chunk: a request waiting for the model ends this stream.
        interrupted: () => dialect.interruptsStreams && request.stream === true && (slots?.waiting ?? 0) > 0,
      });
    } else {
      if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      delivered = !gone();
    }
    stats.inFlight--;
    slots?.release();
    if (delivered === 'stalled') return;
    if (delivered === 'cut') {
      stats.cut++;
      return;
    }
    if (!delivered) {
      stats.decodedForNobody++;
      req.socket.destroy();
      return;
    }
    stats.answered++;
    stats.answeredByPromptHash[promptHash] = (stats.answeredByPromptHash[promptHash] ?? 0) + 1;
    stats.latencySumMs += delay;
    if (outcome.unbounded) stats.unbounded++;
    if (outcome.message.refusal) stats.refusals++;
    stats.completionTokens += outcome.completionTokens;
    stats.reasoningTokens += outcome.reasoningTokens;
    if (streams) return;
    const completion = {
      id,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: request.model,
      choices: [{ index: 0, message: outcome.message, finish_reason: finish, logprobs: null }],
      usage,
    };
    if (framing !== 'json-then-done') return json(res, 200, completion);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(`${JSON.stringify(completion)}\n\ndata: [DONE]\n\n`);
  };

  const control = async (req: IncomingMessage, res: ServerResponse) => {
    const change = JSON.parse(await body(req)) as {
      faults?: z.input<typeof Faults>;
      latency?: Latency;
      dialect?: z.input<typeof Dialect>;
      resetStats?: boolean;
    };
    if (change.faults) plan.set(change.faults);
    if (change.dialect) dialect = Dialect.parse(change.dialect);
    if (change.latency) latency = change.latency;
    if (change.resetStats) stats = emptyStats();
    json(res, 200, { ok: true });
  };

  // The models served, as OpenAI lists them (only when `models` is set: otherwise any name is served).
  const models = async (req: IncomingMessage, res: ServerResponse) => {
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`)
      return json(res, 401, { error: { message: 'Incorrect API key provided.', code: 'invalid_api_key' } });
    json(res, 200, {
      object: 'list',
      data: (options.models ?? []).map((id) => ({ id, object: 'model', owned_by: 'test' })),
    });
  };

  const server = createServer((req, res) => {
    const route =
      req.method === 'POST' && req.url === '/v1/chat/completions'
        ? completion
        : req.method === 'POST' && req.url === '/control'
          ? control
          : req.method === 'GET' && req.url === '/stats'
            ? async () => json(res, 200, stats)
            : req.method === 'GET' && req.url === '/v1/models' && options.models
              ? async () => models(req, res)
              : req.method === 'GET' && req.url === '/props' && options.statesSlots && options.slots
                ? async () => json(res, 200, { total_slots: options.slots })
                : async () => json(res, 404, { error: { message: `no route ${req.method} ${req.url}` } });
    route(req, res).catch((e: Error) => {
      if (!res.headersSent && !res.destroyed) json(res, 400, { error: { message: e.message } });
    });
  });
  server.keepAliveTimeout = 60_000;
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) =>
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve),
  );
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}/v1`,
    stats: () => structuredClone(stats),
    setFaults: (faults) => plan.set(faults),
    setLatency: (l) => {
      latency = l;
    },
    setResponder: (r) => {
      responder = r;
    },
    setDialect: (d) => {
      dialect = Dialect.parse(d);
    },
    resetStats: () => {
      stats = emptyStats();
    },
    stop: async () => {
      // Held (timeout-faulted) requests would keep close() waiting for ever.
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * What a web server or proxy in front of the model answers any path with (fault 'unreadable'): its
 * own page, 200, the same for every request.
 */
const UNREADABLE_PAGE =
  '<!doctype html><html><head><title>Sign in</title></head><body>Sign in to continue</body></html>';

/** Characters per streamed event: fewer events than a real server's token each, the same shape. */
const STREAM_CHUNK_CHARS = 64;
/**
 * The share of a streamed reply's latency before its first chunk: a server streams a reply's first
 * token once it has read the prompt, and decodes the rest one by one (llama-server's `timings`
 * report the two apart, `prompt_ms` and `predicted_ms`: tools/server/README.md). Measured here on
 * llama-cpp-python 0.3.36 serving Gemma 3 270M: first chunks after 0.1-0.9 s of 4-12 s replies.
 */
const PROMPT_SHARE = 0.05;

/**
 * A reply as server-sent events, as OpenAI documents chat completion streaming
 * (https://platform.openai.com/docs/api-reference/chat-streaming): `chat.completion.chunk`
 * objects whose `choices[0].delta` carries the role, then the text in pieces (the dialect's
 * reasoning field first, as vLLM streams `reasoning_content`/`reasoning`, then the content or the
 * refusal), a last chunk with the finish_reason, with `stream_options.include_usage` one more with
 * empty choices and the usage, then `data: [DONE]`. The pieces are spread over the reply's
 * latency: the first after the prompt's share of it (PROMPT_SHARE), the last at its end. A client that left is
 * decoded for to the end all the same (as the slots' note says); a stall sends half the pieces
 * and then nothing, the connection open, until the client leaves. Whether it reached the client
 * (false: decoded for nobody), or stalled.
 */
async function streamReply(
  res: ServerResponse,
  gone: () => boolean,
  r: {
    id: string;
    model: string;
    message: Record<string, unknown>;
    finish: string;
    usage: Record<string, unknown> | undefined;
    delayMs: number;
    stall: boolean;
    /** Checked after each event: true ends the stream there with `[DONE]`. */
    interrupted: () => boolean;
  },
): Promise<boolean | 'stalled' | 'cut'> {
  const deltas: Record<string, unknown>[] = [{ role: 'assistant', content: '' }];
  for (const field of ['reasoning_content', 'reasoning', 'content', 'refusal'] as const) {
    const text = r.message[field];
    if (typeof text !== 'string') continue;
    for (let at = 0; at < text.length; at += STREAM_CHUNK_CHARS)
      deltas.push({ [field]: text.slice(at, at + STREAM_CHUNK_CHARS) });
  }
  const chunk = (delta: Record<string, unknown>, finish: string | null) => ({
    id: r.id,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model: r.model,
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
  });
  const events = [...deltas.map((d) => chunk(d, null)), chunk({}, r.finish)];
  if (r.usage) events.push({ ...chunk({}, null), choices: [], usage: r.usage } as never);
  // The first chunk once the prompt is read, the rest as the reply is decoded.
  const firstMs = r.delayMs * PROMPT_SHARE;
  const gap = (r.delayMs - firstMs) / Math.max(1, events.length - 1);
  for (const [i, event] of events.entries()) {
    if (r.stall && i === Math.ceil(events.length / 2)) {
      await new Promise((resolve) => res.once('close', resolve));
      return 'stalled';
    }
    const wait = i === 0 ? firstMs : gap;
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    if (gone()) continue;
    if (!res.headersSent)
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(`data: ${JSON.stringify(event)}\n\n`);
    if (i < deltas.length && r.interrupted()) {
      res.end('data: [DONE]\n\n');
      return 'cut';
    }
  }
  if (gone()) return false;
  res.end('data: [DONE]\n\n');
  return true;
}

/** Decoding slots taken in arrival order: a freed slot passes straight to the first waiting. */
class Slots {
  private busy = 0;
  private readonly queue: (() => void)[] = [];

  constructor(private readonly count: number) {}

  /** Takes a free slot if there is one. */
  take(): boolean {
    if (this.busy >= this.count) return false;
    this.busy++;
    return true;
  }

  /** Requests waiting for a slot now. */
  get waiting(): number {
    return this.queue.length;
  }

  /** Resolves when a slot passes to this request. */
  free(): Promise<void> {
    return new Promise((resolve) => this.queue.push(resolve));
  }

  release(): void {
    const next = this.queue.shift();
    if (next) next();
    else this.busy--;
  }
}

function body(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function json(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
