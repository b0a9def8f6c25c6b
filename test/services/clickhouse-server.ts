import { randomBytes } from 'node:crypto';
import { createClient } from '@clickhouse/client';
import { z } from 'zod';
import { parseClickHouseUrl } from '../../analytics/url.js';

/** The ClickHouse server the services tests use (deploy/services.sh starts it; CI's is Debian's 18.16). */
export const CLICKHOUSE_SERVER_URL = process.env.BIOALCHEMY_CLICKHOUSE_URL ?? 'http://127.0.0.1:18123';

/** A database of one test's own on the server: its URL for the config, and a way to drop it. */
export interface ServerDatabase {
  readonly url: string;
  readonly name: string;
  dispose(): Promise<void>;
}

/**
 * An admin connection to the test server that makes a fresh database per test, so no test sees
 * another's (or an engineer's) rows. Close it when the file is done.
 */
export function clickHouseServer() {
  const server = parseClickHouseUrl(CLICKHOUSE_SERVER_URL);
  if (server.backend !== 'http')
    throw new Error(`BIOALCHEMY_CLICKHOUSE_URL=${CLICKHOUSE_SERVER_URL}: expected http(s)://`);
  const { origin, username } = server;
  const admin = createClient({ url: origin, username, password: process.env.CLICKHOUSE_PASSWORD ?? '' });
  return {
    origin,
    username,
    admin,
    /** `SELECT version()`, failing with how to start a server when none answers. */
    async version(): Promise<string> {
      try {
        const rs = await admin.query({ query: 'SELECT version() AS v', format: 'JSONEachRow' });
        const [row] = z.array(z.object({ v: z.string() })).parse(await rs.json());
        if (!row) throw new Error('no row from SELECT version()');
        return row.v;
      } catch (e) {
        throw new Error(
          `no ClickHouse server at ${origin} (${(e as Error).message}); start one with ` +
            '`bash deploy/services.sh up clickhouse` or point BIOALCHEMY_CLICKHOUSE_URL at one',
        );
      }
    },
    async freshDatabase(prefix: string): Promise<ServerDatabase> {
      const name = `bioalchemy_${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
      await admin.command({ query: `CREATE DATABASE ${name}` });
      return {
        name,
        url: `${origin.replace('://', `://${encodeURIComponent(username)}@`)}/${name}`,
        dispose: async () => {
          await admin.command({ query: `DROP DATABASE IF EXISTS ${name}` });
        },
      };
    },
    close: () => admin.close(),
  };
}
