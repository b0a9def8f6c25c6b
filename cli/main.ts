import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { explainAccess } from '../topology/runtime/kafka/access-errors.js';
import { configCommand } from './commands/config.js';
import { consumeCommand } from './commands/consume.js';
import { dashboardCommand } from './commands/dashboard.js';
import { decontaminateCommand } from './commands/decontaminate.js';
import { dlqCommand } from './commands/dlq.js';
import { evalCommand } from './commands/eval.js';
import { exportCommand } from './commands/export.js';
import { ingestCommand } from './commands/ingest.js';
import { kafkaCommand } from './commands/kafka.js';
import { llmCommand } from './commands/llm.js';
import { migrateCommand } from './commands/migrate.js';
import { mixCommand } from './commands/mix.js';
import { modelCommand } from './commands/model.js';
import { pollCommand } from './commands/poll.js';
import { produceCommand } from './commands/produce.js';
import { referenceCommand } from './commands/reference.js';
import { resetCommand } from './commands/reset.js';
import { rewardsCommand } from './commands/rewards.js';
import { runCommand } from './commands/run.js';
import { schemasCommand } from './commands/schemas.js';
import { statusCommand } from './commands/status.js';
import { topologyCommand } from './commands/topology.js';
import { ExitStatus, UsageError } from './usage.js';

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/** The `bioalchemy` command: global options, then one subcommand per file of cli/. */
export function program(): Command {
  const root = new Command('bioalchemy')
    .description(
      'BioAlchemy Stream: distils biology articles into verifiable, topic-balanced RL data and feeds GRPO trainers',
    )
    .addOption(
      new Option('--config <file>', 'config file (JSON); see schemas/config.ts').env('BIOALCHEMY_CONFIG'),
    )
    .addOption(
      new Option('--data <dir>', 'data folder of the embedded default (the log is file:<dir>)').env(
        'BIOALCHEMY_DATA',
      ),
    )
    .addOption(
      new Option('--log-level <level>', 'log level of the structured logs on stderr')
        .choices(LOG_LEVELS)
        .env('BIOALCHEMY_LOG_LEVEL'),
    )
    .addHelpText(
      'after',
      `
Examples:
  $ bioalchemy ingest examples/articles
  $ bioalchemy run
  $ BIOALCHEMY_DATA=/srv/bioalchemy bioalchemy consume dlq --limit 10
  $ bioalchemy <command> --help`,
    )
    .version(packageVersion(), '-V, --version', 'print the version and exit')
    .configureHelp({ showGlobalOptions: true })
    .showHelpAfterError(false)
    .exitOverride()
    .configureOutput({
      // One line per mistake (commander puts its "did you mean" suggestion on a line of its own).
      outputError: (message, write) =>
        write(
          `bioalchemy: ${message
            .replace(/^error: /, '')
            .trim()
            .replace(/\s*\n\s*/g, ' ')}\n`,
        ),
    });
  for (const command of [
    runCommand(),
    ingestCommand(),
    pollCommand(),
    produceCommand(),
    consumeCommand(),
    topologyCommand(),
    schemasCommand(),
    modelCommand(),
    evalCommand(),
    exportCommand(),
    rewardsCommand(),
    mixCommand(),
    decontaminateCommand(),
    referenceCommand(),
    dashboardCommand(),
    statusCommand(),
    resetCommand(),
    kafkaCommand(),
    configCommand(),
    migrateCommand(),
    dlqCommand(),
    llmCommand(),
  ]) {
    root.addCommand(command);
  }
  // Subcommands inherit the error handling, so their mistakes exit 2 with one line too.
  const inherit = (cmd: Command) => {
    for (const sub of cmd.commands) {
      sub.copyInheritedSettings(cmd);
      inherit(sub);
    }
  };
  inherit(root);
  return root;
}

/** The package's version (dist/package.json links to the package's own; see bin/build.js). */
function packageVersion(): string {
  return (
    JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
  ).version;
}

/**
 * A reader that goes away (`bioalchemy consume dlq | head -1`) is the end of the output, as for any
 * Unix tool: exit 0 at once, printing nothing. Whatever a command was doing is safe to drop: its
 * writes to the log commit in transactions, and a run stopped mid-step resumes where it committed.
 */
function endQuietlyWhenStdoutCloses(): void {
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0);
    throw e;
  });
}

/** Runs the CLI; resolves to the exit status: 0 done, 1 failed, 2 a usage mistake, others a command's own (ExitStatus). */
export async function main(argv: string[]): Promise<number> {
  endQuietlyWhenStdoutCloses();
  try {
    await program().parseAsync(argv, { from: 'user' });
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) {
      // commander has already printed the help or the one-line error.
      return e.code === 'commander.helpDisplayed' || e.code === 'commander.version' ? 0 : 2;
    }
    // A broker's refusal (credentials, certificates, ACLs), wherever it came from, names what to fix.
    process.stderr.write(`bioalchemy: ${(explainAccess(e) as Error).message}\n`);
    return e instanceof UsageError ? 2 : e instanceof ExitStatus ? e.status : 1;
  }
}
