import { joinPosition, SourceError } from './items.js';

export type Line =
  | { kind: 'line'; text: string; number: number }
  | { kind: 'too-long'; number: number; length: number };

/**
 * Splits decoded text into lines (LF or CRLF), numbered from 1. A line longer than maxChars is
 * reported and skipped without ever being held whole, so one runaway line cannot exhaust memory.
 * An error from the text underneath gets the line it happened on.
 */
export async function* lines(
  chunks: AsyncIterable<string>,
  maxChars = Number.POSITIVE_INFINITY,
): AsyncGenerator<Line> {
  let parts: string[] = [];
  let length = 0;
  let number = 1;
  let overflow = false;
  const take = (piece: string) => {
    if (overflow) {
      length += piece.length;
      return;
    }
    length += piece.length;
    if (length > maxChars) {
      overflow = true;
      parts = [];
    } else if (piece) parts.push(piece);
  };
  const end = (): Line => {
    const line: Line = overflow
      ? { kind: 'too-long', number, length }
      : { kind: 'line', text: parts.join('').replace(/\r$/, ''), number };
    parts = [];
    length = 0;
    overflow = false;
    number++;
    return line;
  };
  const it = chunks[Symbol.asyncIterator]();
  try {
    for (;;) {
      let r: IteratorResult<string>;
      try {
        r = await it.next();
      } catch (e) {
        if (e instanceof SourceError)
          throw new SourceError(e.code, e.reason, joinPosition(`line ${number}`, e.position), e.payload);
        throw e;
      }
      if (r.done) break;
      const chunk = r.value;
      let from = 0;
      for (let nl = chunk.indexOf('\n'); nl >= 0; nl = chunk.indexOf('\n', from)) {
        take(chunk.slice(from, nl));
        yield end();
        from = nl + 1;
      }
      take(chunk.slice(from));
    }
  } finally {
    await it.return?.();
  }
  if (length > 0 || overflow) yield end();
}
