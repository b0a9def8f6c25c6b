import { Command } from 'commander';
import type { DashboardOptions } from '../dashboard.js';
import { wholeNumber } from '../usage.js';

export function dashboardCommand(): Command {
  return new Command('dashboard')
    .description(
      'serve the dashboard and /metrics alone, over the data folder or a ClickHouse server, until Ctrl-C',
    )
    .option(
      '--host <host>',
      'address (default: dashboard.host, 127.0.0.1; any other needs the token in dashboard.tokenEnv)',
    )
    .option('--port <port>', 'port, 0 for any free one (default: dashboard.port, 8788)', wholeNumber)
    .option('--clickhouse <url>', "ClickHouse to read (default: the config's clickhouse, chdb:./data/chdb)")
    .addHelpText(
      'after',
      `
Beside a running pipeline, read a ClickHouse server it writes to (chdb's folder is held by the
process that opened it): the log's offsets and dead letters come from the config's log.

Examples:
  $ bioalchemy dashboard                                   # http://127.0.0.1:8788, the embedded ./data
  $ bioalchemy dashboard --clickhouse http://default@127.0.0.1:8123/default --config prod.json
  $ BIOALCHEMY_DASHBOARD_TOKEN=s3cret bioalchemy dashboard --host 0.0.0.0   # open http://<host>:8788/?token=s3cret`,
    )
    .action(async (_opts, cmd: Command) =>
      (await import('../dashboard.js')).dashboard(cmd.optsWithGlobals<DashboardOptions>()),
    );
}
