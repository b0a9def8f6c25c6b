import { Command, InvalidArgumentError, Option } from 'commander';
import type { RunOptions } from '../run.js';
import { wholeNumber } from '../usage.js';

/** `--processors a,b`: names, each checked against the pipeline at startup. */
function processorList(value: string): string[] {
  const names = value.split(',').map((n) => n.trim());
  if (names.some((n) => !/^[a-z][a-z0-9-]*$/.test(n)))
    throw new InvalidArgumentError('expects processor names separated by commas, e.g. extract,grade.');
  return names;
}

export function runCommand(): Command {
  return (
    new Command('run')
      .description("run the pipeline's processors (and the config's pollers) until Ctrl-C")
      .addOption(
        new Option(
          '--metrics-port <port>',
          'serve Prometheus metrics on <port>/metrics, and the probes /livez (the process answers) and /readyz (every processor holds its partitions)',
        )
          .env('BIOALCHEMY_METRICS_PORT')
          .argParser(wholeNumber),
      )
      .addOption(
        new Option(
          '--metrics-host <host>',
          "the address of /metrics and the probes (default: the config's metricsHost, 127.0.0.1; 0.0.0.0 in a container)",
        ).env('BIOALCHEMY_METRICS_HOST'),
      )
      .option(
        '--until-idle',
        'stop once every processor has read its input to the end, and print a summary; exit 1 at once, nothing spent, when the LLM endpoint refuses every request (the key to fix is named)',
      )
      .option(
        '--max-articles <n>',
        'extract takes at most n articles in this run; the rest stay queued',
        wholeNumber,
      )
      .option('--host <host>', "the feeder API's address (default: the config's server.host, 127.0.0.1)")
      .option(
        '--port <port>',
        "the feeder API's port, 0 for any free one (default: server.port, 8787)",
        wholeNumber,
      )
      .option(
        '--dashboard-host <host>',
        "the dashboard's address (default: dashboard.host, 127.0.0.1; any other needs the token in dashboard.tokenEnv)",
      )
      .option(
        '--dashboard-port <port>',
        "the dashboard's port, 0 for any free one (default: dashboard.port, 8788)",
        wholeNumber,
      )
      .option('--no-dashboard', 'serve no dashboard (and no /metrics beside it)')
      .option(
        '--processors <names>',
        'run only these processors (comma-separated): N processes of one processor share its partitions on Kafka; without the feeder, no feeder API nor dashboard',
        processorList,
      )
      .addOption(
        new Option(
          '--worker-id <id>',
          'this process among the workers of a processor on Kafka: logs, metrics, transactional id; keep it across restarts (default: host-pid)',
        ).env('BIOALCHEMY_WORKER_ID'),
      )
      // Internal: the process `run` starts for the LLM stages (cli/pipeline-process.ts).
      .addOption(new Option('--pipeline-child').hideHelp())
      .addHelpText(
        'after',
        `
The LLM is the config's llm.baseUrl (any OpenAI-compatible endpoint; key from the environment
variable llm.apiKeyEnv names), or without one the local GGUF model (bioalchemy model pull).

Examples:
  $ bioalchemy run                                   # the embedded default, log in ./data, until Ctrl-C
  $ bioalchemy run --until-idle --max-articles 3     # what is queued (3 articles), then a summary
  $ bioalchemy run --metrics-port 9464 --config prod.json
  $ bioalchemy run --processors extract,grade --worker-id w1 --no-dashboard   # one of N workers on Kafka
  $ bioalchemy run --host 0.0.0.0 --port 9000           # trainers lease batches at http://<host>:9000/v1/lease
  $ BIOALCHEMY_DASHBOARD_TOKEN=s3cret bioalchemy run --dashboard-host 0.0.0.0   # the dashboard at http://<host>:8788/?token=s3cret`,
      )
      .action(async (_opts, cmd: Command) =>
        (await import('../run.js')).run(cmd.optsWithGlobals<RunOptions>()),
      )
  );
}
