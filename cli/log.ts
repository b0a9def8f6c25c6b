import pino from 'pino';
import pretty from 'pino-pretty';

/**
 * Structured logs on stderr (stdout carries command output such as `consume`): JSON lines where
 * stderr is a file or a pipe (CI, log collectors), human-readable through pino-pretty where it is
 * a terminal. Fields that could hold secrets are redacted wherever they appear.
 */
export function createLogger(level = process.env.BIOALCHEMY_LOG_LEVEL ?? 'info'): pino.Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service: 'bioalchemy' },
    redact: {
      paths: ['*.apiKey', '*.password', '*.authorization', '*.headers.authorization'],
      censor: '[redacted]',
    },
  };
  if (process.stderr.isTTY) {
    // Pretty-printing in-process (sync), not in a worker thread: a CLI exits right after its last line.
    return pino(options, pretty({ destination: 2, sync: true, colorize: true }));
  }
  return pino(options, pino.destination(2));
}
