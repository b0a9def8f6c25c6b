import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { SourceError } from './items.js';

/** A file path, a Node Readable, or any async iterable of bytes (a fetch body, a test generator). */
export type ByteSource = string | AsyncIterable<Uint8Array>;

export interface ByteOptions {
  /** Stop with a dead letter past this many (uncompressed) bytes; undefined = no limit (streamed formats). */
  maxBytes?: number;
}

const GZIP_MAGIC = [0x1f, 0x8b];

export const isGzip = (head: Uint8Array) => head[0] === GZIP_MAGIC[0] && head[1] === GZIP_MAGIC[1];

function open(src: ByteSource): AsyncIterable<Uint8Array> {
  // 256 KiB reads: few enough syscalls for a 100 MB baseline file, small enough to keep memory flat.
  return typeof src === 'string' ? createReadStream(src, { highWaterMark: 256 * 1024 }) : src;
}

async function* chain(first: Uint8Array, rest: AsyncIterator<Uint8Array>): AsyncGenerator<Uint8Array> {
  try {
    yield first;
    for (let r = await rest.next(); !r.done; r = await rest.next()) yield r.value;
  } finally {
    // Closes the file when the reader stops early.
    await rest.return?.();
  }
}

async function* gunzip(compressed: AsyncIterable<Uint8Array>): AsyncGenerator<Buffer> {
  const input = Readable.from(compressed, { objectMode: false });
  const gz = createGunzip();
  input.on('error', (e) => gz.destroy(e));
  input.pipe(gz);
  try {
    for await (const chunk of gz) yield chunk as Buffer;
  } catch (e) {
    if (e instanceof SourceError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    const what = code === 'Z_BUF_ERROR' ? 'truncated gzip' : 'corrupt gzip';
    throw new SourceError('malformed', `${what}: ${(e as Error).message}`);
  } finally {
    input.destroy();
    gz.destroy();
  }
}

/**
 * The bytes of a source, gunzipped when they start with the gzip magic (whatever the file is
 * called), as Buffers. Throws SourceError for unreadable files, bad gzip and size overruns; the
 * position of an overrun is the uncompressed byte offset.
 */
export async function* byteChunks(src: ByteSource, opts: ByteOptions = {}): AsyncGenerator<Buffer> {
  let iterator: AsyncIterator<Uint8Array>;
  let first: IteratorResult<Uint8Array>;
  try {
    iterator = open(src)[Symbol.asyncIterator]();
    first = await iterator.next();
    // A chunk may be a single byte from a test stream: gather two before sniffing.
    while (!first.done && first.value.length < 2) {
      const next = await iterator.next();
      if (next.done) break;
      first = { done: false, value: Buffer.concat([first.value, next.value]) };
    }
  } catch (e) {
    throw new SourceError('cannot-read', `cannot read: ${(e as Error).message}`);
  }
  if (first.done) return;
  const raw = chain(first.value, iterator);
  const bytes: AsyncIterable<Uint8Array> = isGzip(first.value) ? gunzip(raw) : raw;
  let total = 0;
  try {
    for await (const chunk of bytes) {
      total += chunk.length;
      if (opts.maxBytes !== undefined && total > opts.maxBytes) {
        throw new SourceError(
          'too-large',
          `over the size limit of ${opts.maxBytes} bytes`,
          `byte ${opts.maxBytes}`,
        );
      }
      yield Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
    }
  } catch (e) {
    const at = `byte ${total}`;
    if (e instanceof SourceError) throw new SourceError(e.code, e.reason, e.position ?? at, e.payload);
    throw new SourceError('cannot-read', `cannot read: ${(e as Error).message}`, at);
  }
}
