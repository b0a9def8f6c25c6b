import { createInterface } from 'node:readline/promises';
import { KafkaRuntime } from '../topology/runtime/kafka/index.js';
import { configOf } from './context.js';
import { type GlobalOptions, UsageError } from './usage.js';

export interface ResetOptions extends GlobalOptions {
  app: string;
  yes?: boolean;
}

export async function reset(opts: ResetOptions): Promise<void> {
  const config = configOf(opts);
  if (!config.log.startsWith('kafka://'))
    throw new UsageError("reset deletes an app on Kafka: the config's log is not kafka://");
  const runtime = await KafkaRuntime.open(config.log, { app: opts.app, connection: config.connection });
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
