import { pipelineTopology } from '../processors/pipeline.js';
import { partitionKey } from '../topology/records.js';
import { type GroupStatus, KafkaRuntime } from '../topology/runtime/kafka/index.js';
import { openRuntime } from '../topology/runtime/open.js';
import type { Runtime } from '../topology/runtime/types.js';
import { configOf } from './context.js';
import type { GlobalOptions } from './usage.js';

export interface StatusOptions extends GlobalOptions {
  json?: boolean;
}

export async function status(opts: StatusOptions): Promise<void> {
  const config = configOf(opts);
  const runtime = await openRuntime(config.log);
  try {
    const groups = runtime instanceof KafkaRuntime ? await runtime.groups() : await embeddedGroups(runtime);
    if (opts.json) {
      for (const g of groups) process.stdout.write(`${JSON.stringify(g)}\n`);
      return;
    }
    if (!groups.length) {
      process.stdout.write('no consumer groups yet (nothing has run)\n');
      return;
    }
    process.stdout.write(`${groups.map(describeGroup).join('\n\n')}\n`);
  } finally {
    await runtime.close();
  }
}

/** The embedded log has no members to ask: one process runs every processor; lag from the offsets. */
async function embeddedGroups(runtime: Runtime): Promise<GroupStatus[]> {
  const out: GroupStatus[] = [];
  for (const p of pipelineTopology().processors) {
    if (!p.reads.length) continue;
    const committed = await runtime.committedOffsets(p.name, p.reads);
    if (!committed.size) continue;
    const lag: Record<string, number[]> = {};
    const partitions: Record<string, number[]> = {};
    for (const topic of p.reads) {
      const ends = await runtime.endOffsets(topic);
      lag[topic] = ends.map((end, i) => Math.max(0, end - (committed.get(partitionKey(topic, i)) ?? 0)));
      partitions[topic] = ends.map((_, i) => i);
    }
    out.push({
      group: p.name,
      state: 'embedded',
      members: [{ member: 'this process', client: 'embedded', host: 'local', partitions }],
      lag,
    });
  }
  return out;
}

function describeGroup(g: GroupStatus): string {
  const total = Object.values(g.lag)
    .flat()
    .reduce((a, b) => a + b, 0);
  const lines = [
    `${g.group}  (${g.state}, ${g.members.length} member${g.members.length === 1 ? '' : 's'}, lag ${total})`,
  ];
  for (const m of g.members) {
    const parts = Object.entries(m.partitions)
      .map(([topic, ps]) => `${topic}[${ps.join(',')}]`)
      .join(' ');
    lines.push(`  ${m.client} @ ${m.host}: ${parts || 'no partitions'}`);
  }
  for (const [topic, ps] of Object.entries(g.lag))
    lines.push(`  lag ${topic}: ${ps.map((n, i) => `${i}:${n}`).join(' ')}`);
  return lines.join('\n');
}
