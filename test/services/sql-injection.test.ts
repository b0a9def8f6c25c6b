import { afterAll } from 'vitest';
import { majorVersion } from '../../analytics/clickhouse.js';
import { sqlInjectionSuite } from '../security/sql-suite.js';
import { clickHouseServer } from './clickhouse-server.js';

// The injection suite of test/security/sql-suite.ts on the ClickHouse server CI starts (18.16).
const server = clickHouseServer();
afterAll(() => server.close());
const version = await server.version();

sqlInjectionSuite({
  name: `ClickHouse ${version} over HTTP`,
  queryParams: majorVersion(version) >= 19,
  fresh: () => server.freshDatabase('sqli'),
});
