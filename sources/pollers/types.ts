import type { SourceItem } from '../items.js';

/** One page of new literature and the cursor to resume after it. */
export interface PollPage {
  items: SourceItem[];
  cursor: string;
  /** true when caught up: wait before polling again */
  done: boolean;
}

/** A Retry-After a host sent, which the HTTP client is about to wait out in memory. */
export interface RetryAfter {
  /** Without secret parameters. */
  url: string;
  status: number;
  retryAfterMs: number;
}

/** What a caller hands down to each HTTP request a poll (or skip) makes. */
export interface HttpCall {
  signal?: AbortSignal;
  /**
   * Awaited before a Retry-After is waited out in memory: a wait the process may not live
   * through, so the caller keeps it where a restarted or another process sees it.
   */
  onRetryAfter?: (asked: RetryAfter) => Promise<void>;
}

export interface Poller {
  readonly name: string; // 'pubmed' | 'europepmc' | 'biorxiv' | 'medrxiv'
  /** What its dead letters name as their processor ('sources/pubmed'). */
  readonly processor: string;
  /**
   * cursor: what the previous page returned, or null to start from the configured `since` date.
   * Throws UnreadablePage (or HttpError) when the page cannot be read: nothing is produced and
   * the same cursor is to be polled again, however long that takes. A poller never skips data.
   */
  poll(cursor: string | null, call?: HttpCall): Promise<PollPage>;
  /**
   * The cursor past the page at `cursor`, without reading it, and what that gives up in words
   * ('PMIDs 1, 2 of EDAT 2024-03-04'): only for an operator's `bioalchemy poll --skip`.
   */
  skip(cursor: string | null, call?: HttpCall): Promise<{ cursor: string; skipped: string }>;
}

/**
 * A page the poller cannot read: an error body (NCBI's 200 with `ERROR`, bioRxiv's status
 * message), an empty or malformed body, or an answer to another question than the one asked.
 * Often transient; the cursor stays where it is. `reason` is the service's own words when it gave
 * any, and never carries a secret.
 */
export class UnreadablePage extends Error {
  constructor(
    readonly reason: string,
    /** Without secret parameters. */
    readonly url: string,
    readonly payload: string,
  ) {
    super(`${url}: ${reason}`);
    this.name = 'UnreadablePage';
  }
}

/**
 * The slice of a pino logger the pollers use, so the runtime's logger (which redacts apiKey
 * fields) can be passed straight in. Nothing secret is ever put in the fields or the message.
 */
export interface PollerLog {
  warn(fields: Record<string, unknown>, msg: string): void;
  debug(fields: Record<string, unknown>, msg: string): void;
}

export const silentLog: PollerLog = { warn() {}, debug() {} };
