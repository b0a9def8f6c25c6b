// A processing process for the kill -9 test: runs the doubler as `bioalchemy run` does (run(), with
// its commit interval and overlapped commits) until every input record is committed.
import { partitionKey } from '../../topology/records.js';
import { openRuntime } from '../../topology/runtime/open.js';
import { conformanceTopology, doubler, windowedDoubler } from './processors.js';
import { startRunning } from './running.js';

const [url, prefix, mode, pace] = process.argv.slice(2) as [string, string, 'batch' | 'window', string];
const topology = conformanceTopology(prefix, (t) => {
  // The processor's name, and so its group, is the same in both paces: a fast child finishes what slow ones began.
  if (mode === 'window')
    return [
      windowedDoubler({
        ...t,
        inFlight: 16,
        latencyMs: () => (pace === 'slow' ? 2 + Math.random() * 20 : 0),
      }),
    ];
  return pace === 'slow'
    ? [doubler({ ...t, delayMs: 5, batchSize: 40 })]
    : [doubler({ ...t, batchSize: 500 })];
});
const processor = topology.processors[0]!;
const input = processor.reads[0]!;
// One worker at a time, under one id: a restart fences its killed predecessor at once.
const runtime = await openRuntime(url, { worker: 'child' });
const { task, stop } = await startRunning(runtime, topology, processor);

/** Whether the group has committed up to the end of every input partition. */
async function allCommitted(): Promise<boolean> {
  try {
    const committed = await runtime.committedOffsets(processor.name, [input]);
    const ends = await runtime.endOffsets(input);
    return ends.every((end, p) => (committed.get(partitionKey(input, p)) ?? 0) >= end);
  } catch {
    // kafkajs's admin can fail a metadata read while the cluster settles: ask again.
    return false;
  }
}

let reported = false;
while (!(await allCommitted())) {
  if (task.committedInputs > 0 && !reported) {
    process.stdout.write('committing\n');
    reported = true;
  }
  await new Promise((r) => setTimeout(r, 50));
}
await stop();
await runtime.close();
