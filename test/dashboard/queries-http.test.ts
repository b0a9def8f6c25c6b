import { randomBytes } from 'node:crypto';
import { createClient } from '@clickhouse/client';
import { afterAll } from 'vitest';
import { openClickHouse } from '../../analytics/clickhouse.js';
import { parseClickHouseUrl } from '../../analytics/url.js';
import { dashboardQueriesSuite } from './queries-suite.js';

// The same panel queries on the ClickHouse server CI starts (Debian's 18.16: no query parameters,
// the old JOIN syntax): each test in a database of its own.
const url = parseClickHouseUrl(process.env.BIOALCHEMY_CLICKHOUSE_URL ?? 'http://127.0.0.1:18123');
if (url.backend !== 'http') throw new Error('BIOALCHEMY_CLICKHOUSE_URL: expected http(s)://');
const { origin, username } = url;
const admin = createClient({ url: origin, username, password: process.env.CLICKHOUSE_PASSWORD ?? '' });
afterAll(() => admin.close());

dashboardQueriesSuite('the ClickHouse server', async () => {
  const db = `bioalchemy_dash_${process.pid}_${randomBytes(4).toString('hex')}`;
  await admin.command({ query: `CREATE DATABASE ${db}` });
  const a = await openClickHouse(`${origin.replace('://', `://${encodeURIComponent(username)}@`)}/${db}`);
  return {
    ...a,
    close: async () => {
      await a.close();
      await admin.command({ query: `DROP DATABASE IF EXISTS ${db}` });
    },
  };
});
