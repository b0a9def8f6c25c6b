import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Article } from '../../../schemas/article.js';
import type { DeadLetter } from '../../../schemas/dead-letter.js';
import type { SourceItem } from '../../../sources/items.js';
import type { PollerLog } from '../../../sources/pollers/types.js';

const FIXTURES = fileURLToPath(new URL('../../fixtures/pollers/', import.meta.url));
export const fixture = (rel: string) => readFileSync(join(FIXTURES, rel), 'utf8');

export interface Seen {
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** performance.now() when the server saw the request. */
  at: number;
}

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  /** Hold the response this long (timeouts). */
  delayMs?: number;
}

export type Route = (req: Seen, server: { url: string }) => Reply | Promise<Reply>;

export interface FakeApi {
  url: string;
  seen: Seen[];
  close(): Promise<void>;
}

/** A local HTTP server answering from recorded responses; every request is kept for assertions. */
export async function startFakeApi(route: Route): Promise<FakeApi> {
  const seen: Seen[] = [];
  let url = '';
  const server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://127.0.0.1');
    const entry: Seen = {
      path: u.pathname,
      query: u.searchParams,
      headers: req.headers,
      at: performance.now(),
    };
    seen.push(entry);
    Promise.resolve(route(entry, { url }))
      .then(async (reply) => {
        if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
        if (res.destroyed) return;
        res.writeHead(reply.status ?? 200, reply.headers ?? {});
        res.end(reply.body ?? '');
      })
      .catch((e: unknown) => {
        res.writeHead(599);
        res.end(String(e));
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export const json = (body: string): Reply => ({
  headers: { 'content-type': 'application/json;charset=UTF-8' },
  body,
});
export const xml = (body: string): Reply => ({
  headers: { 'content-type': 'text/xml; charset=UTF-8' },
  body,
});
export const notFound: Reply = { status: 404, body: 'not found' };

export const articlesOf = (items: SourceItem[]): Article[] =>
  items.flatMap((i) => (i.kind === 'article' ? [i.article] : []));
export const deadLettersOf = (items: SourceItem[]): DeadLetter[] =>
  items.flatMap((i) => (i.kind === 'dead-letter' ? [i.deadLetter] : []));

/** A log that keeps every line, to check what would have been written. */
export function memoryLog(): PollerLog & { lines: string[] } {
  const lines: string[] = [];
  const keep = (fields: Record<string, unknown>, msg: string) => {
    lines.push(`${msg} ${JSON.stringify(fields)}`);
  };
  return { lines, warn: keep, debug: keep };
}

/** A clock fixed at noon UTC of a day, movable by tests. */
export function clockAt(iso: string): { now: () => Date; set: (iso: string) => void } {
  let t = new Date(iso);
  return { now: () => t, set: (s) => (t = new Date(s)) };
}
