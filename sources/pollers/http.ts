import { setTimeout as sleep } from 'node:timers/promises';
import type { z } from 'zod';
import { HttpSettings } from '../../schemas/pollers.js';
import { type HostRateLimiter, sharedRateLimiter } from './rate-limit.js';
import { type HttpCall, type PollerLog, type RetryAfter, silentLog } from './types.js';

const VERSION = '0.1.0';

export class HttpError extends Error {
  constructor(
    message: string,
    /** The URL without secret parameters. */
    readonly url: string,
    readonly status: number | null,
    readonly attempts: number,
    /** What the server asked us to wait, when it said. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export interface GetOptions extends HttpCall {
  /** This host's polite spacing between requests. */
  minIntervalMs: number;
  accept?: string;
  /** Query parameters sent but never shown in errors, logs or dead letters (NCBI api_key). */
  secretParams?: Record<string, string>;
}

export interface HttpResponse {
  /** The URL without secret parameters: safe to log and to cite in dead letters. */
  url: string;
  status: number;
  body: Buffer;
}

const RETRYABLE = (status: number) => status === 408 || status === 429 || status >= 500;

/** Retry-After as delay-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | null {
  if (!header) return null;
  const s = header.trim();
  if (/^\d+$/.test(s)) return Number(s) * 1000;
  const at = Date.parse(s);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/**
 * GET with the manners the literature APIs ask for: one rate-limited queue per host, a
 * descriptive User-Agent, retries with exponential backoff on 429/5xx/network errors that honour
 * Retry-After, a timeout per attempt, and the caller's abort signal. Fails by throwing HttpError
 * once retries are spent, so the caller's step is retried later rather than losing a page.
 */
export class PoliteHttp {
  readonly settings: HttpSettings;
  private readonly limiter: HostRateLimiter;
  private readonly log: PollerLog;
  private readonly fetchFn: typeof fetch;

  constructor(
    settings: z.input<typeof HttpSettings> = {},
    deps: { limiter?: HostRateLimiter; log?: PollerLog; fetch?: typeof fetch } = {},
  ) {
    this.settings = HttpSettings.parse(settings);
    this.limiter = deps.limiter ?? sharedRateLimiter;
    this.log = deps.log ?? silentLog;
    this.fetchFn = deps.fetch ?? fetch;
  }

  get userAgent(): string {
    const { userAgent, contact } = this.settings;
    return (
      userAgent ?? `bioalchemy-stream/${VERSION} (literature poller${contact ? `; mailto:${contact}` : ''})`
    );
  }

  async get(url: URL, opts: GetOptions): Promise<HttpResponse> {
    const shown = url.toString();
    const sent = new URL(url);
    for (const [k, v] of Object.entries(opts.secretParams ?? {})) sent.searchParams.set(k, v);
    const secrets = Object.values(opts.secretParams ?? {}).filter((v) => v.length > 0);
    // Belt and braces: messages from the network stack are scrubbed of secret values too.
    const scrub = (s: string) => secrets.reduce((acc, v) => acc.split(v).join('[redacted]'), s);
    const { retries, backoffMs, maxBackoffMs, maxRetryAfterMs, timeoutMs } = this.settings;
    let lastProblem = '';
    for (let attempt = 1; ; attempt++) {
      const release = await this.limiter.acquire(url.host, opts.minIntervalMs, opts.signal);
      let waitOut: RetryAfter | null = null;
      try {
        const timeout = AbortSignal.timeout(timeoutMs);
        let res: Response;
        try {
          res = await this.fetchFn(sent, {
            headers: { 'user-agent': this.userAgent, accept: opts.accept ?? '*/*' },
            signal: opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout,
            redirect: 'follow',
          });
        } finally {
          // The server has answered (or we gave up): the host's next request may be scheduled.
          release();
        }
        if (res.ok) return { url: shown, status: res.status, body: await this.readBody(res, shown, attempt) };
        // Error bodies are never read into messages: NCBI echoes the api_key in its 429 JSON.
        await res.body?.cancel().catch(() => {});
        const asked = retryAfterMs(res.headers.get('retry-after'));
        if (!RETRYABLE(res.status)) {
          throw new HttpError(`GET ${shown}: HTTP ${res.status}`, shown, res.status, attempt);
        }
        if (asked !== null && asked > maxRetryAfterMs) {
          throw new HttpError(
            `GET ${shown}: HTTP ${res.status}, Retry-After ${Math.ceil(asked / 1000)} s is longer than we wait`,
            shown,
            res.status,
            attempt,
            asked,
          );
        }
        if (asked !== null) this.limiter.pauseUntil(url.host, Date.now() + asked);
        lastProblem = `HTTP ${res.status}`;
        if (attempt > retries) {
          throw new HttpError(
            `GET ${shown}: ${lastProblem} after ${attempt} attempts`,
            shown,
            res.status,
            attempt,
            asked,
          );
        }
        if (asked !== null) waitOut = { url: shown, status: res.status, retryAfterMs: asked };
      } catch (e) {
        if (e instanceof HttpError) throw e;
        if (opts.signal?.aborted) throw opts.signal.reason;
        lastProblem = scrub(describe(e));
        if (attempt > retries) {
          throw new HttpError(`GET ${shown}: ${lastProblem} after ${attempt} attempts`, shown, null, attempt);
        }
      }
      // Exponential backoff with jitter, so pollers that failed together do not retry together.
      const delay =
        waitOut?.retryAfterMs ??
        Math.min(maxBackoffMs, backoffMs * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
      this.log.warn(
        { url: shown, problem: lastProblem, attempt, retryInMs: Math.round(delay) },
        'HTTP GET failed; retrying',
      );
      // Retry-After already holds the host's queue; a backoff only delays this caller. The caller
      // is told first (outside the try: its failure is no network error to retry).
      if (waitOut) await opts.onRetryAfter?.(waitOut);
      else await sleep(delay, undefined, opts.signal ? { signal: opts.signal } : {});
    }
  }

  private async readBody(res: Response, shown: string, attempt: number): Promise<Buffer> {
    const max = this.settings.maxBodyBytes;
    const declared = Number(res.headers.get('content-length') ?? Number.NaN);
    const tooBig = () => new HttpError(`GET ${shown}: body over ${max} bytes`, shown, res.status, attempt);
    if (declared > max) {
      await res.body?.cancel().catch(() => {});
      throw tooBig();
    }
    const chunks: Buffer[] = [];
    let total = 0;
    if (res.body) {
      for await (const chunk of res.body) {
        total += chunk.length;
        if (total > max) throw tooBig();
        chunks.push(Buffer.from(chunk));
      }
    }
    return Buffer.concat(chunks);
  }
}

/** A network error as one line: undici hides the useful part ('ECONNREFUSED') in `cause`. */
function describe(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  if (e.name === 'TimeoutError') return 'timed out';
  const cause = e.cause instanceof Error ? `: ${e.cause.message}` : '';
  return `${e.message}${cause}`;
}
