import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openClickHouse } from '../../analytics/clickhouse.js';
import { pipelineTopology } from '../../processors/pipeline.js';
import { openRuntime } from '../../topology/runtime/open.js';
import { BIN } from '../e2e/helpers.js';

// `migrate`, the Helm chart's pre-install/pre-upgrade hook and compose's first service.
describe('bioalchemy migrate', () => {
  it("makes the pipeline's topics and ClickHouse's tables, and is safe to run again", async () => {
    const data = mkdtempSync(join(tmpdir(), 'bioalchemy-migrate-'));
    for (let i = 0; i < 2; i++) {
      const r = spawnSync(process.execPath, [BIN, 'migrate', '--data', data], {
        encoding: 'utf8',
        env: { ...process.env, BIOALCHEMY_LOG_LEVEL: 'warn' },
      });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toBe('migrated\n');
    }
    const runtime = await openRuntime(`file:${data}`);
    try {
      for (const t of pipelineTopology().topics)
        expect((await runtime.endOffsets(t.name)).length, t.name).toBe(t.partitions);
    } finally {
      await runtime.close();
    }
    const analytics = await openClickHouse(`chdb:${join(data, 'chdb')}`);
    try {
      const rows = await analytics.client.query({ query: 'SHOW TABLES', format: 'JSONEachRow' });
      expect(((await rows.json()) as { name: string }[]).map((t) => t.name)).toContain('schema_migrations');
    } finally {
      await analytics.close();
    }
  }, 120_000);
});
