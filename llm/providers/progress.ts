import { TransientError } from '../errors.js';

export interface ProgressLimits {
  /** From sent to the first chunk: the server's queue and the prompt's reading. */
  firstChunkMs: number;
  /** The longest silence between two chunks. */
  stallMs: number;
  /** The whole reply. */
  totalMs: number;
}

/**
 * When any streamed reply from one endpoint last brought a chunk: the endpoint's progress, which
 * its requests still waiting for their first chunk share.
 */
export class EndpointProgress {
  lastChunkAt = Number.NEGATIVE_INFINITY;

  chunk(): void {
    this.lastChunkAt = Date.now();
  }
}

/**
 * The timeouts of a streamed reply. A reply that is arriving is progress: a slow server decoding
 * a long reply is never cut off while its tokens come, only one that does not start (no first
 * chunk), that stops (a silence between chunks), or that outlasts the whole-reply bound.
 *
 * A request waiting in the server's queue has no chunk of its own while the replies ahead of it
 * decode (llama-cpp-python, or a llama-server with its slots taken, sends nothing, not even its
 * headers, before the request's turn): while the endpoint's other streams bring chunks the server
 * is making progress, and the first-chunk timeout waits on; it runs out only after that long with
 * no chunk from the endpoint at all. The signal aborts the request; `expired` says which timeout
 * it was, as a TransientError 'timeout'. The caller's signal (the process stopping) aborts it too,
 * with that signal's reason. A whole reply is watched with every limit at its whole-reply bound:
 * a server may stream it anyway, and its events then make progress as a stream's do.
 */
export class ProgressWatch {
  private readonly controller = new AbortController();
  private readonly total: NodeJS.Timeout;
  private silence: NodeJS.Timeout;
  private started = false;
  /** The timeout that ended the request, if one did. */
  expired: TransientError | undefined;

  constructor(
    private readonly limits: ProgressLimits,
    private readonly endpoint: EndpointProgress,
    private readonly outer?: AbortSignal,
  ) {
    this.total = setTimeout(
      () => this.expire(`no whole reply within ${seconds(limits.totalMs)}`),
      limits.totalMs,
    );
    this.silence = setTimeout(this.firstChunkDue, limits.firstChunkMs);
    if (outer?.aborted) this.controller.abort(outer.reason);
    outer?.addEventListener('abort', this.stop, { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** A chunk arrived: the next must come within the stall timeout. */
  progressed(): void {
    this.endpoint.chunk();
    if (this.expired) return;
    clearTimeout(this.silence);
    const ms = this.limits.stallMs;
    const what = this.started ? 'between chunks' : 'after the first chunk';
    this.started = true;
    this.silence = setTimeout(() => this.expire(`silent over ${seconds(ms)} ${what}`), ms);
  }

  /** The request settled: no timer or listener outlives it. */
  done(): void {
    clearTimeout(this.total);
    clearTimeout(this.silence);
    this.outer?.removeEventListener('abort', this.stop);
  }

  /** No first chunk yet: given up unless the endpoint's other replies brought one meanwhile. */
  private readonly firstChunkDue = () => {
    const quiet = Date.now() - this.endpoint.lastChunkAt;
    if (quiet < this.limits.firstChunkMs)
      this.silence = setTimeout(this.firstChunkDue, this.limits.firstChunkMs - quiet);
    else this.expire(`no first chunk within ${seconds(this.limits.firstChunkMs)}, nor any from the endpoint`);
  };

  private readonly stop = () => this.controller.abort(this.outer!.reason);

  private expire(message: string): void {
    this.expired = new TransientError('timeout', `the reply: ${message}`);
    this.controller.abort(this.expired);
  }
}

const seconds = (ms: number) => `${ms >= 10_000 ? Math.round(ms / 1000) : (ms / 1000).toFixed(1)} s`;
