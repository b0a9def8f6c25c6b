import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { openClickHouse } from '../../analytics/clickhouse.js';
import { expectCountsExactAfterKills } from './count-sink-kill.js';

describe('kill -9 of the count sink mid-stream (embedded log, chdb)', () => {
  it('leaves ClickHouse counts equal to the distinct QA per topic', async () => {
    const url = `chdb:${join(mkdtempSync(join(tmpdir(), 'bioalchemy-counts-')), 'chdb')}`;
    await expectCountsExactAfterKills({ clickhouse: url, open: () => openClickHouse(url), kills: 3 });
  }, 300_000);
});
