import { openClickHouse } from '../analytics/clickhouse.js';
import { pipelineTopology } from '../processors/pipeline.js';
import { configOf, loggerOf, openLog } from './context.js';
import type { GlobalOptions } from './usage.js';

/** `migrate`: the topics and registry subjects (ensureTopics), then ClickHouse's migrations (opening it). */
export async function migrate(opts: GlobalOptions): Promise<void> {
  const config = configOf(opts);
  const log = loggerOf(opts);
  const runtime = await openLog(config, { log });
  try {
    const { topics } = pipelineTopology();
    await runtime.ensureTopics(topics);
    log.info({ topics: topics.length, runtime: runtime.name }, 'topics and schemas up to date');
  } finally {
    await runtime.close();
  }
  const analytics = await openClickHouse(config.clickhouse, {
    waitMs: 60_000,
    connection: config.connection.clickhouse,
  });
  await analytics.close();
  log.info('ClickHouse migrations applied');
  process.stdout.write('migrated\n');
}
