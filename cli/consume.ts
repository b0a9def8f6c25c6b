import { setTimeout as sleep } from 'node:timers/promises';
import { Command } from 'commander';
import { openRuntime } from '../topology/runtime/open.js';
import { configOf, type GlobalOptions, stopOnSignal, topologyWith, wholeNumber } from './context.js';

interface ConsumeOptions extends GlobalOptions {
  limit?: number;
  follow?: boolean;
  withMeta?: boolean;
}

export function consumeCommand(): Command {
  return new Command('consume')
    .description('print the records of a topic as JSON lines, from the beginning')
    .argument('<topic>', 'a topic of the pipeline (see "topology describe")')
    .option('--limit <n>', 'stop after n records', wholeNumber)
    .option('--follow', 'keep waiting for new records until Ctrl-C')
    .option('--with-meta', 'print partition, offset, key and timestamp around each value')
    .addHelpText(
      'after',
      `
Examples:
  $ bioalchemy consume dlq --limit 20
  $ bioalchemy consume qa.classified --follow --with-meta`,
    )
    .action((topic: string, _opts, cmd: Command) => consume(topic, cmd.optsWithGlobals<ConsumeOptions>()));
}

async function consume(topic: string, opts: ConsumeOptions): Promise<void> {
  const topology = topologyWith(topic);
  const limit = opts.limit ?? Number.POSITIVE_INFINITY;
  const runtime = await openRuntime(configOf(opts).log);
  const signal = stopOnSignal();
  let printed = 0;
  try {
    await runtime.ensureTopics(topology.topics);
    const positions = (await runtime.endOffsets(topic)).map(() => 0);
    while (printed < limit && !signal.aborted) {
      let got = 0;
      for (const [partition, from] of positions.entries()) {
        for (const r of await runtime.read(topic, partition, from, Math.min(500, limit - printed))) {
          if (printed >= limit) break;
          positions[partition] = r.offset + 1;
          const line = opts.withMeta
            ? JSON.stringify({
                partition: r.partition,
                offset: r.offset,
                key: r.key,
                timestamp: r.timestamp,
                value: JSON.parse(r.value),
              })
            : r.value;
          process.stdout.write(`${line}\n`);
          printed++;
          got++;
        }
      }
      // The log has no push notification across processes: --follow polls it.
      if (got === 0) {
        if (!opts.follow) break;
        await sleep(200);
      }
    }
  } finally {
    await runtime.close();
  }
}
