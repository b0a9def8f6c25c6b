import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Article } from '../../../schemas/article.js';
import type { DeadLetter } from '../../../schemas/dead-letter.js';
import type { SourceItem } from '../../../sources/items.js';

export const FIXTURES = fileURLToPath(new URL('../../fixtures/sources/', import.meta.url));
export const fixture = (rel: string) => join(FIXTURES, rel);

export interface Collected {
  items: SourceItem[];
  articles: Article[];
  positions: (string | null)[];
  deadLetters: DeadLetter[];
}

export async function collect(gen: AsyncIterable<SourceItem>): Promise<Collected> {
  const out: Collected = { items: [], articles: [], positions: [], deadLetters: [] };
  for await (const item of gen) {
    out.items.push(item);
    if (item.kind === 'article') {
      out.articles.push(item.article);
      out.positions.push(item.position);
    } else {
      // Every reader's dead letter has a code of its own: 'unclassified' is for old logs only.
      if (item.deadLetter.code === 'unclassified')
        throw new Error(`dead letter without a code of its own: ${item.deadLetter.reason}`);
      out.deadLetters.push(item.deadLetter);
    }
  }
  return out;
}

/** A scratch directory removed after the test file. */
export function scratchDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'bioalchemy-sources-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Bytes delivered in small pieces, so tags, entities and UTF-8 characters straddle chunk edges. */
export async function* inPieces(bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}
