import { isUtf8 } from 'node:buffer';
import { TextDecoder } from 'node:util';
import { SourceError } from './items.js';

/**
 * Bytes to text, strictly. Decisions (documented for users in the reader's dead letters):
 * - UTF-8 is the default; a UTF-8 byte order mark is dropped.
 * - UTF-16 is read only with a byte order mark (XML 1.0 §4.3.3 requires one); UTF-16 without
 *   one is indistinguishable from binary junk by rule, so NUL bytes in the first KiB refuse the file.
 * - XML may declare another encoding (e.g. ISO-8859-1); it is honoured when the platform's
 *   TextDecoder knows it, otherwise the file is refused.
 * - Invalid UTF-8 is never replaced with U+FFFD: the text before it is delivered, then the file
 *   stops with the byte offset of the first bad byte.
 */
export interface DecodeOptions {
  /** Honour an encoding in the XML declaration. */
  xml?: boolean;
}

const HEAD_BYTES = 1024;

function declaredEncoding(head: Buffer): string | null {
  const m = /^\s*<\?xml[^>]*?\bencoding\s*=\s*["']([A-Za-z0-9._:-]+)["']/.exec(head.toString('latin1'));
  return m ? m[1]!.toLowerCase() : null;
}

const UTF8_LABELS = new Set(['utf-8', 'utf8', 'us-ascii', 'ascii']);

/** Index just past the last complete UTF-8 sequence, so a character split across chunks waits for its tail. */
function completeUpTo(buf: Buffer): number {
  const len = buf.length;
  for (let i = len - 1; i >= 0 && i >= len - 4; i--) {
    const b = buf[i]!;
    if ((b & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return i + need > len ? i : len;
  }
  return len;
}

/** Offset of the first byte that is not part of a well-formed UTF-8 sequence (RFC 3629), or -1. */
export function firstInvalidUtf8(buf: Uint8Array): number {
  let i = 0;
  while (i < buf.length) {
    const b = buf[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let min: number;
    if (b >= 0xc2 && b <= 0xdf) [need, min] = [1, 0x80];
    else if (b >= 0xe0 && b <= 0xef) [need, min] = [2, 0x800];
    else if (b >= 0xf0 && b <= 0xf4) [need, min] = [3, 0x10000];
    else return i;
    let cp = b & (0x3f >> need);
    for (let k = 1; k <= need; k++) {
      const c = buf[i + k];
      if (c === undefined || (c & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (c & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += need + 1;
  }
  return -1;
}

function hexAround(buf: Buffer, at: number): string {
  const from = Math.max(0, at - 16);
  return `bytes ${from}..${Math.min(buf.length, at + 16)} of the chunk: ${buf.subarray(from, at + 16).toString('hex')}`;
}

/** Decodes a byte stream to strings, throwing SourceError (after the good text) at the first bad byte. */
export async function* textChunks(
  bytes: AsyncIterable<Buffer>,
  opts: DecodeOptions = {},
): AsyncGenerator<string> {
  const it = bytes[Symbol.asyncIterator]();
  const headParts: Buffer[] = [];
  let headLength = 0;
  let ended = false;
  while (headLength < HEAD_BYTES) {
    const r = await it.next();
    if (r.done) {
      ended = true;
      break;
    }
    headParts.push(r.value);
    headLength += r.value.length;
  }
  let head = Buffer.concat(headParts);
  if (head.length === 0) return;

  let label = 'utf-8';
  if (head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) head = head.subarray(3);
  else if (head[0] === 0xff && head[1] === 0xfe) label = 'utf-16le';
  else if (head[0] === 0xfe && head[1] === 0xff) label = 'utf-16be';
  else {
    const nul = head.subarray(0, HEAD_BYTES).indexOf(0);
    if (nul >= 0) {
      throw new SourceError(
        'bad-encoding',
        'unsupported encoding: NUL bytes, so UTF-16 without a byte order mark or binary data',
        `byte ${nul}`,
        hexAround(head, nul),
      );
    }
    const declared = opts.xml ? declaredEncoding(head) : null;
    if (declared && !UTF8_LABELS.has(declared)) label = declared;
  }

  async function* rest(): AsyncGenerator<Buffer> {
    yield head;
    if (ended) return;
    for (let r = await it.next(); !r.done; r = await it.next()) yield r.value;
  }

  try {
    if (label === 'utf-8') yield* utf8(rest());
    else yield* other(rest(), label);
  } finally {
    await it.return?.();
  }
}

async function* utf8(chunks: AsyncIterable<Buffer>): AsyncGenerator<string> {
  let carry: Buffer | null = null;
  let offset = 0;
  for await (const chunk of chunks) {
    const buf: Buffer = carry ? Buffer.concat([carry, chunk]) : chunk;
    const cut = completeUpTo(buf);
    const whole = buf.subarray(0, cut);
    if (!isUtf8(whole)) {
      const bad = firstInvalidUtf8(whole);
      if (bad > 0) yield whole.subarray(0, bad).toString('utf8');
      throw new SourceError('bad-encoding', 'invalid UTF-8', `byte ${offset + bad}`, hexAround(whole, bad));
    }
    if (cut > 0) yield whole.toString('utf8');
    offset += cut;
    carry = cut < buf.length ? Buffer.from(buf.subarray(cut)) : null;
  }
  if (carry)
    throw new SourceError('bad-encoding', 'invalid UTF-8: input ends inside a character', `byte ${offset}`);
}

async function* other(chunks: AsyncIterable<Buffer>, label: string): AsyncGenerator<string> {
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(label, { fatal: true });
  } catch {
    throw new SourceError('bad-encoding', `unsupported encoding: ${label}`, 'byte 0');
  }
  let offset = 0;
  for await (const chunk of chunks) {
    let s: string;
    try {
      s = decoder.decode(chunk, { stream: true });
    } catch {
      throw new SourceError(
        'bad-encoding',
        `invalid ${label}`,
        `within bytes ${offset}..${offset + chunk.length}`,
      );
    }
    offset += chunk.length;
    if (s) yield s;
  }
  try {
    const tail = decoder.decode();
    if (tail) yield tail;
  } catch {
    throw new SourceError(
      'bad-encoding',
      `invalid ${label}: input ends inside a character`,
      `byte ${offset}`,
    );
  }
}
