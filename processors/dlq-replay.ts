import { z } from 'zod';
import { DeadLetter, type DeadLetterCode } from '../schemas/dead-letter.js';
import type { LogRecord, OutgoingRecord } from '../topology/records.js';
import type { Runtime } from '../topology/runtime/types.js';
import type { TopicSpec } from '../topology/topology.js';

/**
 * Which dead letters were re-driven, by dead-letter id (compacted: one record each, kept for good).
 * Written in the same atomic append as the inputs it re-drives, so a dead letter is replayed
 * exactly once: a second replay finds its id here and does nothing.
 */
export const DLQ_REPLAYED_TOPIC: TopicSpec = {
  name: 'dlq.replayed',
  partitions: 1,
  compacted: true,
  retentionMs: null,
  schema: null,
  description: 'dead letters re-driven by `bioalchemy dlq replay`, by dead-letter id (each once)',
};

/** One dead letter re-driven: where its input went back to. */
export const DlqReplayed = z.object({
  deadLetterId: z.string().min(1),
  code: z.string(),
  processor: z.string().nullable(),
  input: z.object({ topic: z.string(), partition: z.number().int(), offset: z.string() }),
  replayedAt: z.string().describe('ISO time of the replay'),
});
export type DlqReplayed = z.infer<typeof DlqReplayed>;

export interface ReplayFilter {
  codes?: readonly DeadLetterCode[];
  processors?: readonly string[];
  /** Dead letters written at or after this time (ms since the epoch). */
  since?: number;
  /** Dead letters written before this time (ms since the epoch). */
  until?: number;
}

/** What a replay would do: the dead letters it re-drives (grouped by input), and those it cannot. */
export interface ReplayPlan {
  /** Dead letters the filter matched. */
  matched: number;
  /** Of them, replayed before (in dlq.replayed): nothing to do. */
  alreadyReplayed: number;
  /** Inputs to append again, each with the dead letters it re-drives (an article's passages share it). */
  inputs: { input: LogRecord; deadLetters: DeadLetter[] }[];
  /** Dead letters that cannot be replayed, with why. */
  cannot: { deadLetter: DeadLetter; why: string }[];
}

async function readAll(runtime: Runtime, topic: string): Promise<LogRecord[]> {
  const all: LogRecord[] = [];
  for (const [partition] of (await runtime.endOffsets(topic)).entries()) {
    for (let at = 0; ; ) {
      const records = await runtime.read(topic, partition, at, 1000);
      if (records.length === 0) break;
      all.push(...records);
      at = records[records.length - 1]!.offset + 1;
    }
  }
  return all;
}

/** The ids of the dead letters replayed so far. */
export async function replayedIds(runtime: Runtime): Promise<Map<string, DlqReplayed>> {
  const ids = new Map<string, DlqReplayed>();
  for (const r of await readAll(runtime, DLQ_REPLAYED_TOPIC.name)) {
    const parsed = DlqReplayed.safeParse(safeJson(r.value));
    if (r.key && parsed.success) ids.set(r.key, parsed.data);
  }
  return ids;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Plans a replay of the dead letters the filter matches: nothing is written. */
export async function planReplay(runtime: Runtime, filter: ReplayFilter): Promise<ReplayPlan> {
  const done = await replayedIds(runtime);
  const plan: ReplayPlan = { matched: 0, alreadyReplayed: 0, inputs: [], cannot: [] };
  const byInput = new Map<string, { input: LogRecord; deadLetters: DeadLetter[] }>();
  for (const r of await readAll(runtime, 'dlq')) {
    const parsed = DeadLetter.safeParse(safeJson(r.value));
    if (!parsed.success) continue;
    const dl = parsed.data;
    if (filter.codes?.length && !filter.codes.includes(dl.code)) continue;
    if (filter.processors?.length && !filter.processors.includes(dl.processor ?? '')) continue;
    if (filter.since !== undefined && r.timestamp < filter.since) continue;
    if (filter.until !== undefined && r.timestamp >= filter.until) continue;
    plan.matched++;
    if (done.has(dl.id)) {
      plan.alreadyReplayed++;
      continue;
    }
    const origin = dl.origin;
    if (origin.kind === 'file') {
      plan.cannot.push({
        deadLetter: dl,
        why: `read from the file ${origin.path}, not from the log: ingest the file again`,
      });
      continue;
    }
    if (origin.kind === 'api') {
      plan.cannot.push({ deadLetter: dl, why: `read from ${origin.url}, not from the log: poll it again` });
      continue;
    }
    const where = `${origin.topic}/${origin.partition}@${origin.offset}`;
    let input = byInput.get(where)?.input;
    if (!input) {
      const offset = Number(origin.offset);
      const [found] = await runtime.read(origin.topic, origin.partition, offset, 1).catch(() => []);
      // Retention or compaction removed it: the log holds a later record there, or none.
      if (!found || found.offset !== offset) {
        plan.cannot.push({
          deadLetter: dl,
          why: `its input ${where} is no longer in the log (retention or compaction removed it)`,
        });
        continue;
      }
      if (found.unreadable) {
        plan.cannot.push({ deadLetter: dl, why: `its input ${where} cannot be read: ${found.unreadable}` });
        continue;
      }
      input = found;
      byInput.set(where, { input, deadLetters: [] });
    }
    byInput.get(where)!.deadLetters.push(dl);
  }
  plan.inputs = [...byInput.values()];
  return plan;
}

/**
 * Appends each planned input to its topic and partition again, with a dlq.replayed record per
 * dead letter, all in one atomic append: the processors then read the inputs as new ones, and a
 * second replay of the same dead letters finds them replayed. Returns the records appended.
 */
export async function replay(runtime: Runtime, plan: ReplayPlan, now = new Date()): Promise<number> {
  const records: OutgoingRecord[] = [];
  for (const { input, deadLetters } of plan.inputs) {
    records.push({ topic: input.topic, partition: input.partition, key: input.key, value: input.value });
    for (const dl of deadLetters) {
      const marker: DlqReplayed = {
        deadLetterId: dl.id,
        code: dl.code,
        processor: dl.processor,
        input: { topic: input.topic, partition: input.partition, offset: String(input.offset) },
        replayedAt: now.toISOString(),
      };
      records.push({ topic: DLQ_REPLAYED_TOPIC.name, key: dl.id, value: JSON.stringify(marker) });
    }
  }
  if (records.length) {
    await runtime.ensureTopics([DLQ_REPLAYED_TOPIC]);
    await runtime.append(records);
  }
  return records.length;
}
