import { setTimeout as sleep } from 'node:timers/promises';
import { configOf, openLog, stopOnSignal, topologyWith } from './context.js';
import type { GlobalOptions } from './usage.js';

export interface ConsumeOptions extends GlobalOptions {
  limit?: number;
  follow?: boolean;
  withMeta?: boolean;
}

export async function consume(topic: string, opts: ConsumeOptions): Promise<void> {
  const topology = topologyWith(topic);
  const limit = opts.limit ?? Number.POSITIVE_INFINITY;
  const runtime = await openLog(configOf(opts));
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
