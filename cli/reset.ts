import { createInterface } from 'node:readline/promises';
import { Command } from 'commander';
import { KafkaRuntime } from '../topology/runtime/kafka/index.js';
import { configOf, type GlobalOptions, UsageError } from './context.js';

interface ResetOptions extends GlobalOptions {
  app: string;
  yes?: boolean;
}

export function resetCommand(): Command {
  return new Command('reset')
    .description(
      "delete one app's topics (changelogs included) and consumer groups on Kafka, after a confirmation",
    )
    .requiredOption('--app <name>', "the app (the config's app: the prefix of its Kafka names)")
    .option('--yes', 'do not ask for confirmation')
    .addHelpText(
      'after',
      `
Stop the app's workers first: a running member keeps its group alive. Transactional ids cannot
be deleted; they expire on the broker.

Examples:
  $ bioalchemy reset --app staging
  $ bioalchemy reset --app ci-1234 --yes --config kafka.json`,
    )
    .action((_opts, cmd: Command) => reset(cmd.optsWithGlobals<ResetOptions>()));
}

async function reset(opts: ResetOptions): Promise<void> {
  const config = configOf(opts);
  if (!config.log.startsWith('kafka://'))
    throw new UsageError("reset deletes an app on Kafka: the config's log is not kafka://");
  const runtime = await KafkaRuntime.open(config.log, { app: opts.app });
  try {
    const found = await runtime.appResources();
    if (!found.topics.length && !found.groups.length) {
      process.stdout.write(`app "${opts.app}" has no topics and no consumer groups\n`);
      return;
    }
    process.stdout.write(
      `app "${opts.app}" on ${runtime.url.brokers.join(',')}:\n` +
        `  ${found.topics.length} topics: ${found.topics.join(', ') || '-'}\n` +
        `  ${found.groups.length} groups: ${found.groups.join(', ') || '-'}\n`,
    );
    if (
      !opts.yes &&
      !(await confirm(`delete them? type the app's name (${opts.app}) to confirm: `, opts.app))
    ) {
      process.stdout.write('nothing deleted\n');
      return;
    }
    const deleted = await runtime.deleteApp();
    process.stdout.write(`deleted ${deleted.topics.length} topics and ${deleted.groups.length} groups\n`);
  } finally {
    await runtime.close();
  }
}

async function confirm(question: string, expected: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return (await rl.question(question)).trim() === expected;
  } catch {
    // stdin closed without an answer
    return false;
  } finally {
    rl.close();
  }
}
