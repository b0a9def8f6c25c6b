import pino from 'pino';

/**
 * Structured logs on stderr (stdout carries command output such as `consume`). Fields that could
 * hold secrets are redacted wherever they appear.
 */
export function createLogger(level = process.env.BIOALCHEMY_LOG_LEVEL ?? 'info'): pino.Logger {
  return pino(
    {
      level,
      base: { service: 'bioalchemy' },
      redact: {
        paths: ['*.apiKey', '*.password', '*.authorization', '*.headers.authorization'],
        censor: '[redacted]',
      },
    },
    pino.destination(2),
  );
}
