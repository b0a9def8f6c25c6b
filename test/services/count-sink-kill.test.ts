import { randomBytes } from 'node:crypto';
import { createClient } from '@clickhouse/client';
import { afterAll, describe, it } from 'vitest';
import { openClickHouse } from '../../analytics/clickhouse.js';
import { parseClickHouseUrl } from '../../analytics/url.js';
import { expectCountsExactAfterKills } from '../e2e/count-sink-kill.js';

// The same kills as test/e2e/count-sink-kill.test.ts, with the count sink writing to the
// ClickHouse server (18.16 here) in a database of its own.
const server = parseClickHouseUrl(process.env.BIOALCHEMY_CLICKHOUSE_URL ?? 'http://127.0.0.1:18123');
if (server.backend !== 'http') throw new Error('BIOALCHEMY_CLICKHOUSE_URL: expected http(s)://');
const admin = createClient({
  url: server.origin,
  username: server.username,
  password: process.env.CLICKHOUSE_PASSWORD ?? '',
});
const db = `bioalchemy_kill_${process.pid}_${randomBytes(4).toString('hex')}`;

afterAll(async () => {
  await admin.command({ query: `DROP DATABASE IF EXISTS ${db}` });
  await admin.close();
});

describe('kill -9 of the count sink mid-stream (embedded log, ClickHouse server)', () => {
  it('leaves ClickHouse counts equal to the distinct QA per topic', async () => {
    await admin.command({ query: `CREATE DATABASE ${db}` });
    const url = `${server.origin.replace('://', `://${encodeURIComponent(server.username)}@`)}/${db}`;
    await expectCountsExactAfterKills({ clickhouse: url, open: () => openClickHouse(url), kills: 3 });
  }, 300_000);
});
