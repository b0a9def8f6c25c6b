import { resolve } from 'node:path';

/** Where analytics live: in this process (chdb) or on a ClickHouse server over HTTP. */
export type ClickHouseTarget =
  | { readonly backend: 'chdb'; readonly path: string }
  | {
      readonly backend: 'http';
      /** protocol://host:port only: credentials travel as client options, never in a URL that may be logged. */
      readonly origin: string;
      readonly username: string;
      readonly database: string;
    };

// Identifiers end up in DDL and in the client's `database` option; keeping them to this shape
// means no quoting rules are ever needed for them.
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * `chdb:DIR` (relative to the working directory; `chdb::memory:` for a throw-away engine) or
 * `http(s)://user@host:port/database`. A password in the URL is refused: it would end up in
 * config files and logs, so it comes from CLICKHOUSE_PASSWORD only.
 */
export function parseClickHouseUrl(url: string): ClickHouseTarget {
  if (url.startsWith('chdb:')) {
    const dir = url.slice('chdb:'.length);
    if (dir === ':memory:') return { backend: 'chdb', path: ':memory:' };
    if (!dir) throw new Error('clickhouse URL "chdb:": expected chdb:DIR (e.g. chdb:./data/chdb)');
    return { backend: 'chdb', path: resolve(dir) };
  }
  if (!/^https?:\/\//i.test(url)) {
    throw new Error(
      `clickhouse URL "${redact(url)}": expected chdb:DIR or http(s)://user@host:port/database`,
    );
  }
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`clickhouse URL "${redact(url)}": not a valid URL`);
  }
  if (u.password) {
    throw new Error(
      `clickhouse URL "${redact(url)}": a password in the URL is not accepted; set CLICKHOUSE_PASSWORD instead`,
    );
  }
  if (u.search || u.hash)
    throw new Error(`clickhouse URL "${redact(url)}": no query string or fragment expected`);
  const path = u.pathname.replace(/^\/+|\/+$/g, '');
  const database = path ? decodeURIComponent(path) : 'default';
  if (!IDENTIFIER.test(database)) {
    throw new Error(`clickhouse URL "${redact(url)}": database "${database}" must match ${IDENTIFIER}`);
  }
  return {
    backend: 'http',
    origin: `${u.protocol}//${u.host}`,
    username: u.username ? decodeURIComponent(u.username) : 'default',
    database,
  };
}

/** The URL as safe to print: whatever sits between "//" and "@" loses its password part. */
export function redact(url: string): string {
  return url.replace(/^([a-z]+:\/\/[^/@:]*):[^/@]*@/i, '$1:***@');
}
