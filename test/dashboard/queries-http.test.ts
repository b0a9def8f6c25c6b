import { afterAll } from 'vitest';
import { openClickHouse } from '../../analytics/clickhouse.js';
import { clickHouseServer } from '../services/clickhouse-server.js';
import { dashboardQueriesSuite } from './queries-suite.js';

// The same panel queries on the ClickHouse server CI starts (Debian's 18.16: no query parameters,
// the old JOIN syntax): each test in a database of its own.
const server = clickHouseServer();
afterAll(() => server.close());

dashboardQueriesSuite('the ClickHouse server', async () => {
  const db = await server.freshDatabase('dash');
  const a = await openClickHouse(db.url);
  return {
    ...a,
    close: async () => {
      await a.close();
      await db.dispose();
    },
  };
});
