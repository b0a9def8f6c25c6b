import type { SourceItem } from '../items.js';

/** One page of new literature and the cursor to resume after it. */
export interface PollPage {
  items: SourceItem[];
  cursor: string;
  /** true when caught up: wait before polling again */
  done: boolean;
}

export interface Poller {
  readonly name: string; // 'pubmed' | 'europepmc' | 'biorxiv'
  /** cursor: what the previous page returned, or null to start from the configured `since` date. */
  poll(cursor: string | null, signal?: AbortSignal): Promise<PollPage>;
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
