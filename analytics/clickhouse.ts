import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ClickHouseClient, createClient } from '@clickhouse/client';
import { z } from 'zod';
import type { ClickHouseConnection } from '../schemas/connection.js';
import { readPem, Secret } from '../topology/secret.js';
import { applyMigrations } from './migrations.js';
import { type ClickHouseTarget, parseClickHouseUrl } from './url.js';

/** One ClickHouse, whichever backend: the pipeline only ever talks to `client`. */
export interface Analytics {
  readonly client: ClickHouseClient;
  readonly backend: 'chdb' | 'http';
  /** `SELECT version()`, e.g. 18.16.1 (Debian's server) or 26.7.2.1 (chdb 3.4's engine). */
  readonly serverVersion: string;
  readonly features: Features;
  /** Migrations this open applied; empty when start.sh or an earlier open already had. */
  readonly migrationsApplied: readonly string[];
  /** Printable: backend and place, never a credential. */
  readonly target: string;
  close(): Promise<void>;
}

export interface Features {
  /** Server-side `{name:Type}` query parameters (HTTP `param_*`). Absent before the 19.x series. */
  readonly queryParams: boolean;
}

export interface OpenOptions {
  /** Defaults to deploy/clickhouse/migrations. */
  readonly migrationsDir?: string;
  /** Per-request timeout for the HTTP backend. */
  readonly requestTimeoutMs?: number;
  /**
   * How long to keep trying a server that refuses connections (restarting, or not up yet) before
   * failing; 0 fails at once. Errors other than a refused or dropped connection fail at once.
   */
  readonly waitMs?: number;
  /** Told of each failed try while waiting, with the wait before the next. */
  readonly onWait?: (err: Error, retryInMs: number) => void;
  /** The server's CA and the password's source (config connection.clickhouse). */
  readonly connection?: ClickHouseConnection;
}

/** A store function needs something this server lacks; thrown before any SQL is sent. */
export class UnsupportedByServerError extends Error {
  override readonly name = 'UnsupportedByServerError';
}

/**
 * Opens `chdb:DIR` in this process or `http(s)://user@host:port/database` (password and CA from
 * connection.clickhouse), checks it answers, and brings its schema up to date.
 */
export async function openClickHouse(url: string, opts: OpenOptions = {}): Promise<Analytics> {
  const target = parseClickHouseUrl(url);
  const { client, release } =
    target.backend === 'chdb' ? await openChdb(target.path) : openHttp(target, opts);
  const where =
    target.backend === 'chdb'
      ? `chdb:${target.path}`
      : `${target.origin}/${target.database} as ${target.username}`;
  try {
    const serverVersion = await versionWithin(client, where, opts);
    const migrationsApplied = await applyMigrations(client, where, opts.migrationsDir);
    let closed = false;
    return {
      client,
      backend: target.backend,
      serverVersion,
      features: { queryParams: target.backend === 'chdb' || majorVersion(serverVersion) >= 19 },
      migrationsApplied,
      target: where,
      async close() {
        if (closed) return;
        closed = true;
        await client.close();
        await release();
      },
    };
  } catch (e) {
    await client.close().catch(() => undefined);
    await release().catch(() => undefined);
    throw e;
  }
}

/** Fails with UnsupportedByServerError unless the server binds `{name:Type}` parameters. */
export function requireQueryParams(a: Analytics, fn: string): void {
  if (a.features.queryParams) return;
  throw new UnsupportedByServerError(
    `${fn} needs query parameters ({name:Type}), which ClickHouse ${a.serverVersion} at ${a.target} lacks ` +
      '(they arrived in the 19.x series); use chdb or a newer server',
  );
}

export function majorVersion(v: string): number {
  const major = Number.parseInt(v, 10);
  return Number.isFinite(major) ? major : 0;
}

const VersionRow = z.object({ v: z.string() });

async function version(client: ClickHouseClient, where: string): Promise<string> {
  try {
    // Not the connection's own serverVersion: chdb 3.4 answers "unknown" there.
    const rs = await client.query({ query: 'SELECT version() AS v', format: 'JSONEachRow' });
    const [row] = z.array(VersionRow).parse(await rs.json());
    if (!row) throw new Error('no row from SELECT version()');
    return row.v;
  } catch (e) {
    throw new Error(`ClickHouse at ${where} does not answer: ${(e as Error).message}`, { cause: e });
  }
}

// What a server that is restarting or not yet listening answers; anything else (a wrong password,
// a missing database) will not change by waiting.
const UNREACHABLE = /ECONNREFUSED|ECONNRESET|EPIPE|socket hang up|ETIMEDOUT|Timeout error/;

async function versionWithin(client: ClickHouseClient, where: string, opts: OpenOptions): Promise<string> {
  const deadline = Date.now() + (opts.waitMs ?? 0);
  for (let delay = 250; ; delay = Math.min(delay * 2, 5000)) {
    try {
      return await version(client, where);
    } catch (e) {
      const err = e as Error;
      const retryIn = Math.min(delay, deadline - Date.now());
      if (!UNREACHABLE.test(err.message) || retryIn <= 0) throw err;
      opts.onWait?.(err, retryIn);
      await new Promise((r) => setTimeout(r, retryIn));
    }
  }
}

type ClientConnection = NonNullable<NonNullable<Parameters<typeof createClient>[0]>['connection']>;

interface Opened {
  readonly client: ClickHouseClient;
  /** Frees what the backend holds beyond the client (chdb's per-process data directory). */
  readonly release: () => Promise<void>;
}

type HttpTarget = Extract<ClickHouseTarget, { backend: 'http' }>;

function openHttp(t: HttpTarget, opts: OpenOptions): Opened {
  return { client: createClient(httpClientOptions(t, opts)), release: async () => undefined };
}

/** The HTTP client's options: the password read where connection.clickhouse names it, the CA's text. */
export function httpClientOptions(
  t: HttpTarget,
  opts: Pick<OpenOptions, 'connection' | 'requestTimeoutMs'>,
  env: NodeJS.ProcessEnv = process.env,
): NonNullable<Parameters<typeof createClient>[0]> {
  const { caFile, password } = opts.connection ?? {};
  if (caFile && !t.origin.startsWith('https:'))
    throw new Error('connection.clickhouse.caFile: applies to a ClickHouse server over https://');
  return {
    url: t.origin,
    username: t.username,
    password: password
      ? Secret.read(password, 'connection.clickhouse.password', env).reveal()
      : (env.CLICKHOUSE_PASSWORD ?? ''),
    database: t.database,
    application: 'bioalchemy-stream',
    ...(caFile ? { tls: { ca_cert: Buffer.from(readPem(caFile, 'connection.clickhouse.caFile')) } } : {}),
    ...(opts.requestTimeoutMs ? { request_timeout: opts.requestTimeoutMs } : {}),
  };
}

/**
 * libchdb lets one process use a folder: a second one fails inside the engine, which prints a
 * "Cannot lock file .../status" of its own first. Several workers started from one folder with the
 * default config (`chdb:./data/chdb`) would meet that; our own lock file, checked before libchdb
 * loads the folder, names the way out in one line. A lock left by a killed process (its pid gone)
 * is taken over.
 */
function lockChdbFolder(path: string): () => void {
  mkdirSync(path, { recursive: true });
  const file = join(path, 'bioalchemy.pid');
  for (;;) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      return () => rmSync(file, { force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const holder = Number(readFileSync(file, 'utf8'));
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && alive(holder))
      throw new Error(folderInUse(path, holder));
    rmSync(file, { force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function folderInUse(path: string, pid: number): string {
  return (
    `chdb:${path} is in use by another process (pid ${pid}), and chdb lets one process use a folder: ` +
    'give this process a "clickhouse" setting of its own, or run a ClickHouse server (deploy/services.sh up clickhouse) ' +
    'and point "clickhouse" at it (http://...); workers that run only LLM stages need none'
  );
}

// libchdb binds one data directory per process; several Analytics on the same one coexist.
const chdbOpen = new Map<string, number>();

async function openChdb(path: string): Promise<Opened> {
  const other = [...chdbOpen.keys()].find((p) => p !== path);
  if (other) {
    throw new Error(
      `chdb:${path}: this process already has chdb:${other} open, and chdb binds one data directory per process; close it first`,
    );
  }
  // Loaded on demand: the HTTP backend never pays for libchdb.
  const { createChdbConnection } = await import('chdb/connection');
  const unlock = chdbOpen.has(path) || path === ':memory:' ? () => {} : lockChdbFolder(path);
  let connection: ReturnType<typeof createChdbConnection>;
  try {
    connection = createChdbConnection({ path });
  } catch (e) {
    unlock();
    throw e;
  }
  chdbOpen.set(path, (chdbOpen.get(path) ?? 0) + 1);
  return {
    // The cast is types only: chdb 3.4 declares its Connection against @clickhouse/client-common
    // 1.23.0 while @clickhouse/client 1.23.1 bundles its own copy, and the two ClickHouseSettings
    // types do not unify. At run time the client drives it as documented.
    client: createClient({ connection: connection as unknown as ClientConnection }),
    release: async () => {
      const n = (chdbOpen.get(path) ?? 1) - 1;
      if (n > 0) {
        chdbOpen.set(path, n);
        return;
      }
      chdbOpen.delete(path);
      unlock();
      // close() returns before the engine lets go of the directory; until drainPending settles,
      // opening another directory in this process is refused.
      const { drainPending } = await import('chdb');
      await drainPending();
    },
  };
}
