import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import zlib from 'node:zlib';

const decoders: Record<string, (b: Buffer) => Promise<Buffer>> = {
  gzip: promisify(zlib.gunzip),
  'x-gzip': promisify(zlib.gunzip),
  deflate: promisify(zlib.inflate),
  br: promisify(zlib.brotliDecompress),
};

export interface HttpFetch {
  fetch: typeof fetch;
  /** Closes the pooled connections. */
  close(): void;
}

/**
 * A `fetch` for the openai client over node:http(s) with pooled keep-alive connections: the same
 * request and response for the client's JSON calls at a fraction of the CPU of Node's built-in
 * fetch (its web streams and request cloning cost about a millisecond a call, which at 64 calls in
 * flight is most of the client's time). A string or bytes sent; the whole response read before it
 * resolves, except a stream of server-sent events (a streamed reply), which resolves at its headers
 * with the events as they arrive, the signal aborting it until its end. Redirects are not
 * followed; an encoded response (gzip, deflate, br) is decoded. Aborting the signal rejects with
 * its reason, an AbortError, which the openai client reports as a timeout when its own timer
 * aborted, unless the whole response had arrived (see `abort` below).
 */
export function httpFetch(): HttpFetch {
  const agents = {
    'http:': new http.Agent({ keepAlive: true }),
    'https:': new https.Agent({ keepAlive: true }),
  };
  const fetchOverHttp = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    if (input instanceof Request) throw new TypeError('httpFetch: pass a URL and init, not a Request');
    const body = init.body;
    if (body != null && typeof body !== 'string' && !(body instanceof Uint8Array)) {
      throw new TypeError('httpFetch: only string or byte bodies are supported');
    }
    const url = new URL(input);
    const agent = agents[url.protocol as keyof typeof agents];
    if (!agent) throw new TypeError(`httpFetch: unsupported protocol ${url.protocol}`);
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => {
      headers[name] = value;
    });
    const signal = init.signal ?? undefined;
    const method = init.method ?? 'GET';
    return new Promise<{ res: http.IncomingMessage; raw: Buffer | null }>((settle, fail) => {
      if (signal?.aborted) return fail(signal.reason);
      // Settled either way, the request stops listening: the signal may outlive it.
      const resolve = (value: { res: http.IncomingMessage; raw: Buffer | null }) => {
        signal?.removeEventListener('abort', abort);
        settle(value);
      };
      const reject = (e: unknown) => {
        signal?.removeEventListener('abort', abort);
        fail(e);
      };
      let received = false;
      const send = url.protocol === 'https:' ? https.request : http.request;
      const req = send(url, { agent, method, headers }, (res) => {
        if (isEventStream(res)) {
          // Resolved now, read as it comes: the signal still aborts it until it has ended.
          settle({ res, raw: null });
          res.on('close', () => signal?.removeEventListener('abort', abort));
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          received = true;
          resolve({ res, raw: Buffer.concat(chunks) });
        });
        res.on('close', () => {
          if (!res.complete) reject(signal?.aborted ? signal.reason : new Error('response ended early'));
        });
      });
      // A timeout measures the endpoint's silence, not this process's. After the loop was busy past
      // the deadline (a long step, a loaded machine), the timer runs before the reply already
      // waiting in the socket is read; one more turn reads it. Aborting there would throw away a
      // reply that arrived and pay for it again.
      const abort = () =>
        setImmediate(() => {
          if (!received) req.destroy(signal!.reason);
        });
      signal?.addEventListener('abort', abort, { once: true });
      req.on('error', reject);
      req.end(body ?? undefined);
    }).then(async ({ res, raw }) => {
      const status = res.statusCode ?? 0;
      const encoding = res.headers['content-encoding']?.trim().toLowerCase();
      const decode = encoding ? decoders[encoding] : undefined;
      const bytes =
        raw === null ? (Readable.toWeb(res) as ReadableStream<Uint8Array>) : decode ? await decode(raw) : raw;
      const responseHeaders = new Headers();
      for (let i = 0; i < res.rawHeaders.length; i += 2) {
        const name = res.rawHeaders[i]!;
        // The body is decoded here: its encoding and length are no longer the header's.
        if (decode && /^content-(encoding|length)$/i.test(name)) continue;
        responseHeaders.append(name, res.rawHeaders[i + 1]!);
      }
      const empty = status === 204 || status === 205 || status === 304 || method === 'HEAD';
      const response = new Response(empty ? null : bytes, {
        status,
        statusText: res.statusMessage ?? '',
        headers: responseHeaders,
      });
      Object.defineProperty(response, 'url', { value: url.href });
      return response;
    });
  };
  return {
    fetch: fetchOverHttp as typeof fetch,
    close: () => {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  };
}

/**
 * Whether a body is server-sent events, by its Content-Type: what the server sent, whatever the
 * request asked (the provider reads the body by it too).
 */
export function isEventStreamType(contentType: string | null | undefined): boolean {
  return /^\s*text\/event-stream\b/i.test(contentType ?? '');
}

/** A stream of server-sent events that answers the request (not an error), sent as it is. */
function isEventStream(res: http.IncomingMessage): boolean {
  return (
    (res.statusCode ?? 0) < 300 &&
    isEventStreamType(res.headers['content-type']) &&
    !res.headers['content-encoding']
  );
}
