import { z } from 'zod';
import { DeadLetter, type DeadLetterCode } from '../schemas/dead-letter.js';
import { type LogRecord, type OutgoingRecord, partitionKey } from '../topology/records.js';
import { FencedError, type LogTask, type Runtime } from '../topology/runtime/types.js';
import type { TopicSpec } from '../topology/topology.js';

/**
 * Which dead letters were re-driven, by dead-letter id (compacted: one record each, kept for good).
 * Written in the same transaction as the inputs it re-drives, so a dead letter is replayed exactly
 * once: a later replay finds its id here and does nothing, and one at the same time is fenced
 * (replayOnce).
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

/** The consumer group whose offset on dlq.replayed fences replays that run at the same time. */
export const DLQ_REPLAY_GROUP = 'dlq-replay';

/** How long a replay waits for another replay's hold on dlq.replayed (Kafka's group) to end. */
const HOLD_WAIT_MS = 60_000;

/**
 * Plans a replay of the dead letters the filter matches and carries it out, once whatever runs at
 * the same time: each planned input is appended to its topic and partition again, with a
 * dlq.replayed record per dead letter, in one transaction of the group DLQ_REPLAY_GROUP that also
 * moves the group's offset on dlq.replayed to the topic's end after those records. A replay that
 * planned while another appended cannot commit (the embedded log refuses a commit whose group
 * offset moved since it was read; Kafka gives the partition to one member at a time and fences the
 * transactions of the one before): it plans again and finds the other's records. Returns the plan
 * carried out; the processors then read its inputs as new ones.
 */
export async function replayOnce(
  runtime: Runtime,
  filter: ReplayFilter,
  now = new Date(),
): Promise<ReplayPlan> {
  const topic = DLQ_REPLAYED_TOPIC.name;
  await runtime.ensureTopics([DLQ_REPLAYED_TOPIC]);
  const task = await runtime.openTask({ group: DLQ_REPLAY_GROUP, topics: [topic], stores: [] });
  try {
    for (;;) {
      await holding(task);
      const end = (await runtime.endOffsets(topic))[0] ?? 0;
      const plan = await planReplay(runtime, filter);
      const records = replayRecords(plan, now);
      if (records.length === 0) return plan;
      const markers = records.filter((r) => r.topic === topic).length;
      const tx = await task.begin();
      await tx.produce(records);
      await tx.commitOffsets(
        new Map([[partitionKey(topic, 0), { topic, partition: 0, offset: end + markers }]]),
      );
      try {
        await tx.commit();
        return plan;
      } catch (e) {
        if (!(e instanceof FencedError)) throw e;
        await tx.abort();
        await task.rewind();
      }
    }
  } finally {
    await task.close();
  }
}

/** Waits until the task holds dlq.replayed's partition (at once on the embedded log). */
async function holding(task: LogTask): Promise<void> {
  const deadline = Date.now() + HOLD_WAIT_MS;
  while (!task.owned().includes(0)) {
    if (Date.now() >= deadline)
      throw new Error(
        `another dlq replay has held ${DLQ_REPLAYED_TOPIC.name} (group ${DLQ_REPLAY_GROUP}) for over ${HOLD_WAIT_MS / 1000} s`,
      );
    await task.poll(1, 200);
  }
}

/**
 * A plan's records: each input again, and a dlq.replayed record per dead letter it re-drives. All
 * are written by the step that holds dlq.replayed's partition 0 (`from`): on Kafka with kafkajs a
 * step's outputs travel in its input partition's transaction, the one that fences another replay.
 */
function replayRecords(plan: ReplayPlan, now: Date): OutgoingRecord[] {
  const records: OutgoingRecord[] = [];
  for (const { input, deadLetters } of plan.inputs) {
    records.push({
      topic: input.topic,
      partition: input.partition,
      key: input.key,
      value: input.value,
      from: 0,
    });
    for (const dl of deadLetters) {
      const marker: DlqReplayed = {
        deadLetterId: dl.id,
        code: dl.code,
        processor: dl.processor,
        input: { topic: input.topic, partition: input.partition, offset: String(input.offset) },
        replayedAt: now.toISOString(),
      };
      records.push({ topic: DLQ_REPLAYED_TOPIC.name, key: dl.id, value: JSON.stringify(marker), from: 0 });
    }
  }
  return records;
}
