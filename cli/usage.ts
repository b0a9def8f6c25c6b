import { InvalidArgumentError } from 'commander';

/**
 * What the command definitions (cli/commands/) share with the commands: nothing here may import
 * more than commander, so that --help, --version and usage mistakes load no command's modules.
 */

/** A mistake of the user's: printed as one line, exit status 2, no stack trace. */
export class UsageError extends Error {}

/** A command that ended in a state of its own: its message printed as one line, exiting with `status` (see its --help). */
export class ExitStatus extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** The options every command takes; each also comes from an environment variable (see --help). */
export interface GlobalOptions {
  config?: string;
  data?: string;
  logLevel?: string;
}

/** commander argument parser for a whole number; a bad value is a usage error (exit 2). */
export function wholeNumber(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('expects a whole number.');
  return Number(value);
}

/** `poll --once` exit statuses beyond 0 (caught up), 1 (failed) and 2 (usage). */
export const POLL_STALLED = 3;
export const POLL_PAUSED = 4;

/** The formats `ingest --format` offers, and its JSONL mappings (sources reads them). */
export const FORMATS = ['jats', 'medline', 'jsonl', 'text', 'markdown', 'pdf'] as const;
export const JSONL_MAPPINGS = ['auto', 's2orc', 'generic'] as const;
