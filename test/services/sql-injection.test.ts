import { randomBytes } from 'node:crypto';
import { createClient } from '@clickhouse/client';
import { afterAll } from 'vitest';
import { z } from 'zod';
import { majorVersion } from '../../analytics/clickhouse.js';
import { parseClickHouseUrl } from '../../analytics/url.js';
import { sqlInjectionSuite } from '../security/sql-suite.js';

// The injection suite of test/security/sql-suite.ts on the ClickHouse server CI starts (18.16).
const SERVER_URL = process.env.BIOALCHEMY_CLICKHOUSE_URL ?? 'http://127.0.0.1:18123';
const server = parseClickHouseUrl(SERVER_URL);
if (server.backend !== 'http')
  throw new Error(`BIOALCHEMY_CLICKHOUSE_URL=${SERVER_URL}: expected http(s)://`);
const { origin, username } = server;
const admin = createClient({ url: origin, username, password: process.env.CLICKHOUSE_PASSWORD ?? '' });
afterAll(() => admin.close());
const rs = await admin.query({ query: 'SELECT version() AS v', format: 'JSONEachRow' });
const version = z.array(z.object({ v: z.string() })).parse(await rs.json())[0]!.v;

sqlInjectionSuite({
  name: `ClickHouse ${version} over HTTP`,
  queryParams: majorVersion(version) >= 19,
  async fresh() {
    const db = `bioalchemy_sqli_${process.pid}_${randomBytes(4).toString('hex')}`;
    await admin.command({ query: `CREATE DATABASE ${db}` });
    return {
      url: `${origin.replace('://', `://${encodeURIComponent(username)}@`)}/${db}`,
      dispose: async () => {
        await admin.command({ query: `DROP DATABASE IF EXISTS ${db}` });
      },
    };
  },
});
