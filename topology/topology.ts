import { z } from 'zod';
import { RECORD_SCHEMA_NAMES, type RecordSchemaName } from '../schemas/index.js';
import type { Processor } from './processor.js';

export const TopicSpec = z
  .object({
    name: z.string().regex(/^[a-zA-Z0-9._-]+$/, 'topic names use letters, digits, ".", "_" and "-"'),
    partitions: z.number().int().min(1).max(1024).default(1),
    compacted: z.boolean().default(false).describe('keep only the latest value per key'),
    retentionMs: z.number().int().positive().nullable().default(null).describe('null keeps records forever'),
    schema: z.enum(RECORD_SCHEMA_NAMES as [RecordSchemaName, ...RecordSchemaName[]]).nullable(),
    description: z.string().default(''),
    // Only a cache may grow. Elsewhere a key's partition is part of correctness: a store's changelog
    // and a processor's state are per input partition, a key's records keep their order only
    // within one partition, and consumer offsets count per partition. Growing moves keys (hash
    // modulo the count), so their old records and state would sit where no reader of the key looks.
    // The journal's records are only replies to reuse: dropped, each costs at most one call again.
    cache: z
      .boolean()
      .optional()
      .describe(
        'its records are a cache (the response journal): its partitions may grow, and what it held is then dropped',
      ),
  })
  .strict();
export type TopicSpec = z.infer<typeof TopicSpec>;

/** Why a topic that is no cache keeps its partition count: the end of ensureTopics' refusal. */
export const PARTITIONS_FIXED =
  "a topic's keys, records and state are placed by its partition count, so only a cache topic's may " +
  'grow; start over with `bioalchemy reset` (Kafka) or a new data folder (embedded)';
export type TopicInput = z.input<typeof TopicSpec>;

/**
 * A topology is data: topics, and processors that declare what they read, write, store and sink.
 * It can be validated and printed without any runtime.
 */
/** Something that writes into the log from outside it: file readers, folder watchers, API pollers. */
export interface SourceSpec {
  readonly name: string;
  readonly description: string;
  readonly writes: readonly string[];
}

export interface Topology {
  readonly topics: readonly TopicSpec[];
  readonly sources: readonly SourceSpec[];
  readonly processors: readonly Processor[];
  /** Topic that receives dead letters from every processor and reader. */
  readonly deadLetterTopic: string;
}

export class TopologyError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid topology: ${problems.join('; ')}`);
  }
}

export function defineTopology(def: {
  topics: readonly TopicInput[];
  sources?: readonly SourceSpec[];
  processors: readonly Processor[];
  deadLetterTopic?: string;
}): Topology {
  const problems: string[] = [];
  const topics: TopicSpec[] = [];
  for (const [i, t] of def.topics.entries()) {
    const parsed = TopicSpec.safeParse(t);
    if (parsed.success) topics.push(parsed.data);
    else
      problems.push(
        `topic #${i}: ${parsed.error.issues.map((x) => `${x.path.join('.')}: ${x.message}`).join(', ')}`,
      );
  }
  const topology: Topology = {
    topics,
    sources: def.sources ?? [],
    processors: def.processors,
    deadLetterTopic: def.deadLetterTopic ?? 'dlq',
  };
  problems.push(...validateTopology(topology));
  if (problems.length) throw new TopologyError(problems);
  return topology;
}

/** Every problem, each a sentence naming the topic or processor at fault. */
export function validateTopology(t: Topology): string[] {
  const problems: string[] = [];
  const topicNames = new Set<string>();
  for (const topic of t.topics) {
    if (topicNames.has(topic.name)) problems.push(`topic "${topic.name}" is declared twice`);
    topicNames.add(topic.name);
  }
  if (!topicNames.has(t.deadLetterTopic))
    problems.push(`dead-letter topic "${t.deadLetterTopic}" is not declared`);
  for (const s of t.sources) {
    for (const topic of s.writes) {
      if (!topicNames.has(topic)) problems.push(`source "${s.name}" writes unknown topic "${topic}"`);
    }
  }
  const names = new Set<string>();
  for (const p of t.processors) {
    if (names.has(p.name)) problems.push(`processor "${p.name}" is declared twice`);
    names.add(p.name);
    for (const topic of [...p.reads, ...p.writes]) {
      if (!topicNames.has(topic)) problems.push(`processor "${p.name}" uses unknown topic "${topic}"`);
    }
    if (p.reads.length === 0 && !p.punctuate)
      problems.push(`processor "${p.name}" reads nothing and has no timer`);
    if (p.stores.length > 0 && p.scope !== 'global') {
      // Partition-scoped state: partition n of every input is one task with one store, so the
      // inputs must be co-partitioned (Kafka Streams refuses the same).
      const counts = p.reads.map((r) => ({ r, n: t.topics.find((x) => x.name === r)?.partitions }));
      const distinct = new Set(counts.map((c) => c.n).filter((n) => n !== undefined));
      if (distinct.size > 1)
        problems.push(
          `processor "${p.name}" keeps state per partition over inputs with different partition counts ` +
            `(${counts.map((c) => `${c.r}: ${c.n}`).join(', ')}): give them the same count, or make it scope 'global'`,
        );
    }
    if (p.writes.length === 0 && (p.sinks ?? []).length === 0) {
      problems.push(`processor "${p.name}" writes nothing: give it an output topic or an external sink`);
    }
  }
  const cycle = findCycle(t.processors);
  if (cycle) problems.push(`cycle: ${cycle.join(' -> ')}`);
  return problems;
}

/** A processor cycle through topics (a -> t1 -> b -> t2 -> a); a processor's own compacted state is not a cycle. */
function findCycle(processors: readonly Processor[]): string[] | null {
  const readersOf = new Map<string, Processor[]>();
  for (const p of processors) for (const r of p.reads) readersOf.set(r, [...(readersOf.get(r) ?? []), p]);
  const state = new Map<string, 'visiting' | 'done'>();
  const path: string[] = [];
  const visit = (p: Processor): string[] | null => {
    if (state.get(p.name) === 'done') return null;
    if (state.get(p.name) === 'visiting') return [...path.slice(path.indexOf(p.name)), p.name];
    state.set(p.name, 'visiting');
    path.push(p.name);
    for (const topic of p.writes) {
      for (const next of readersOf.get(topic) ?? []) {
        path.push(`[${topic}]`);
        const found = visit(next);
        if (found) return found;
        path.pop();
      }
    }
    path.pop();
    state.set(p.name, 'done');
    return null;
  };
  for (const p of processors) {
    const found = visit(p);
    if (found) return found;
  }
  return null;
}

export function topicOf(t: Topology, name: string): TopicSpec {
  const topic = t.topics.find((x) => x.name === name);
  if (!topic) throw new Error(`unknown topic "${name}"`);
  return topic;
}

/** A plain-text picture of the graph: topics, then each processor with its inputs, outputs, stores. */
export function describeTopology(t: Topology): string {
  const lines: string[] = ['Topics:'];
  const width = Math.max(...t.topics.map((x) => x.name.length));
  for (const topic of t.topics) {
    const flags = [
      `${topic.partitions} partition${topic.partitions === 1 ? '' : 's'}`,
      topic.compacted ? 'compacted' : null,
      topic.retentionMs ? `retention ${topic.retentionMs} ms` : null,
      topic.schema ? `schema ${topic.schema}` : 'no schema',
    ].filter(Boolean);
    lines.push(
      `  ${topic.name.padEnd(width)}  ${flags.join(', ')}${topic.description ? `  — ${topic.description}` : ''}`,
    );
  }
  if (t.sources.length) {
    lines.push('', 'Sources:');
    for (const s of t.sources) lines.push(`  ${s.name} ──► ${s.writes.join(', ')}  — ${s.description}`);
  }
  lines.push('', 'Processors:');
  for (const p of t.processors) {
    lines.push(`  ${p.name}${p.placeholder ? '  (placeholder: not run)' : ''}`);
    if (p.description) lines.push(`    ${p.description}`);
    lines.push(
      `    reads:  ${p.reads.join(', ') || '—'}${p.punctuate ? `  (timer every ${p.punctuate.everyMs} ms)` : ''}`,
    );
    lines.push(`    writes: ${[...p.writes, t.deadLetterTopic].join(', ')}`);
    if (p.stores.length) lines.push(`    stores: ${p.stores.join(', ')}`);
    if (p.sinks?.length) lines.push(`    sinks:  ${p.sinks.join(', ')}`);
  }
  lines.push('', 'Flow:');
  for (const s of t.sources) lines.push(`  (${s.name}) ──► ${s.writes.join(' + ')}`);
  for (const p of t.processors) {
    const ins = p.reads.length ? p.reads.join(' + ') : '(timer)';
    const outs = [...p.writes, ...(p.sinks ?? [])].join(' + ');
    lines.push(`  ${ins} ──► ${p.name} ──► ${outs}`);
  }
  return lines.join('\n');
}
