import { afterAll, describe, it } from 'vitest';
import { openClickHouse } from '../../analytics/clickhouse.js';
import { expectCountsExactAfterKills } from '../e2e/count-sink-kill.js';
import { clickHouseServer, type ServerDatabase } from './clickhouse-server.js';

// The same kills as test/e2e/count-sink-kill.test.ts, with the count sink writing to the
// ClickHouse server (18.16 here) in a database of its own.
const server = clickHouseServer();
let db: ServerDatabase | null = null;

afterAll(async () => {
  await db?.dispose();
  await server.close();
});

describe('kill -9 of the count sink mid-stream (embedded log, ClickHouse server)', () => {
  it('leaves ClickHouse counts equal to the distinct QA per topic', async () => {
    db = await server.freshDatabase('kill');
    const { url } = db;
    await expectCountsExactAfterKills({ clickhouse: url, open: () => openClickHouse(url), kills: 3 });
  }, 300_000);
});
