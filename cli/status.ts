import { pipelineTopology } from '../processors/pipeline.js';
import { activePause, readPollerStates, stalledMs } from '../processors/poll.js';
import type { PollerState } from '../schemas/pollers.js';
import { partitionKey } from '../topology/records.js';
import { type GroupStatus, KafkaRuntime } from '../topology/runtime/kafka/index.js';
import type { Runtime } from '../topology/runtime/types.js';
import { configOf, openLog } from './context.js';
import type { GlobalOptions } from './usage.js';

export interface StatusOptions extends GlobalOptions {
  json?: boolean;
}

export async function status(opts: StatusOptions): Promise<void> {
  const config = configOf(opts);
  const runtime = await openLog(config);
  try {
    const groups = runtime instanceof KafkaRuntime ? await runtime.groups() : await embeddedGroups(runtime);
    const pollers = await readPollerStates(runtime);
    if (opts.json) {
      for (const g of groups) process.stdout.write(`${JSON.stringify(g)}\n`);
      const now = new Date();
      for (const p of pollers)
        process.stdout.write(
          `${JSON.stringify({ ...p, stalledSeconds: Math.round(stalledMs(p, now) / 1000) })}\n`,
        );
      return;
    }
    if (!groups.length) process.stdout.write('no consumer groups yet (nothing has run)\n');
    else process.stdout.write(`${groups.map(describeGroup).join('\n\n')}\n`);
    if (pollers.length) process.stdout.write(`\n${describePollers(pollers, new Date())}\n`);
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

/** Each poller: where it is, and, loudly, why it is not moving. */
function describePollers(pollers: (PollerState & { cursorKey: string })[], now: Date): string {
  const lines = ['pollers'];
  for (const p of pollers) {
    const pause = activePause(p, now);
    const state = p.stalled
      ? `STALLED for ${Math.round(stalledMs(p, now) / 60_000)} min (since ${p.stalled.since}, ${p.stalled.attempts} attempt(s)): ${p.stalled.reason}`
      : pause
        ? `paused upstream: ${pause.host} asked not to be called before ${pause.until} (${pause.reason})`
        : 'reading';
    lines.push(
      `  ${p.poller} (${p.cursorKey}): ${state}`,
      `    cursor ${p.cursor ?? 'null (from its since date)'}`,
    );
    if (p.stalled) {
      if (p.stalled.url) lines.push(`    page ${p.stalled.url}`);
      lines.push(
        `    it retries by itself; to give that page up: bioalchemy poll --skip ${p.cursorKey} '${p.cursor ?? 'null'}'`,
      );
    }
  }
  return lines.join('\n');
}
