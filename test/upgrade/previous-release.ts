import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import { pipelineTopology } from '../../processors/pipeline.js';
import { contentHash } from '../../schemas/index.js';
import { TopicCodecs } from '../../topology/codec.js';
import type { Processor } from '../../topology/processor.js';
import type { OutgoingRecord } from '../../topology/records.js';
import type { Runtime } from '../../topology/runtime/types.js';
import { defineTopology, type Topology } from '../../topology/topology.js';
import { readAll, stepUntil, task } from '../conformance/suite.js';

/**
 * The previous release (b63f87b: before the GroundTruth object and the rollout-lease record), as
 * fixtures: one record of each kind as its writers encoded it (test/fixtures/previous-release/
 * <kind>.json, made by that release's zod schemas), and the JSON Schema it registered for each
 * topic as `<topic>-value` (registry.json). Shared by the embedded and the Kafka upgrade tests.
 */
const DIR = new URL('../fixtures/previous-release/', import.meta.url);

export interface PreviousTopic {
  /** The record kind that release wrote to the topic. */
  readonly schema: string;
  /** What it registered: its zod schema's JSON Schema, titled, open content models. */
  readonly jsonSchema: Record<string, unknown> & { title: string };
}

export const PREVIOUS: { release: string; topics: Record<string, PreviousTopic> } = JSON.parse(
  readFileSync(new URL('registry.json', DIR), 'utf8'),
);

/** The record of `kind` that release wrote, as JSON text. */
export const previousRecord = (kind: string): string =>
  JSON.stringify(JSON.parse(readFileSync(new URL(`${kind}.json`, DIR), 'utf8')));

/**
 * Each topic's previous-release record, stamped as that release stamped it on the embedded log (a
 * hash of its schema then, which the new code's stamp is not: the record is validated).
 */
export function previousRecords(): OutgoingRecord[] {
  return Object.entries(PREVIOUS.topics).map(([topic, { schema, jsonSchema }]) => {
    const { title: _title, ...body } = jsonSchema;
    return {
      topic,
      key: `previous-${topic}`,
      value: previousRecord(schema),
      validatedAs: contentHash('schema', schema, JSON.stringify(body)),
    };
  });
}

/**
 * The pipeline's topics read by one probe that passes every value on: a record the new code's
 * schemas refuse becomes a dead letter on probe.dlq, which must stay empty.
 */
export function probeTopology(): Topology {
  const topics = Object.keys(PREVIOUS.topics);
  const probe: Processor = {
    name: 'upgrade-probe',
    reads: topics,
    writes: ['probe.out'],
    stores: [],
    async process(batch, ctx) {
      for (const r of batch) ctx.emit('probe.out', r.topic, { topic: r.topic, value: r.value });
    },
  };
  return defineTopology({
    topics: [
      ...pipelineTopology().topics,
      { name: 'probe.out', partitions: 1, schema: null },
      { name: 'probe.dlq', partitions: 1, schema: 'dead-letter' },
    ],
    processors: [probe],
    deadLetterTopic: 'probe.dlq',
  });
}

/** Reads the previous release's records with the new code; every one is read, as the new shapes. */
export async function expectPreviousRecordsRead(runtime: Runtime, topology: Topology): Promise<void> {
  const n = Object.keys(PREVIOUS.topics).length;
  const t = await task(runtime, topology, topology.processors[0]!, 64);
  await stepUntil(t, n);
  await t.close();
  expect((await readAll(runtime, 'probe.dlq')).map((r) => r.value)).toEqual([]);
  const read = new Map(
    (await readAll(runtime, 'probe.out')).map((r) => {
      const v = r.value as { topic: string; value: unknown };
      return [v.topic, v.value];
    }),
  );
  expect([...read.keys()].sort()).toEqual(Object.keys(PREVIOUS.topics).sort());
  // What the new code reads is what it would write: each value is valid for its topic now.
  const codecs = new TopicCodecs(topology);
  for (const [topic, value] of read) expect(() => codecs.encode(topic, value)).not.toThrow();
  // The whole batch with string ground_truths reads as the lease it recorded.
  expect(read.get('rollout.batches')).toEqual({
    id: 'lease-1',
    run: 'run-1',
    mixVersion: 3,
    rank: 0,
    epoch: 0,
    index: 0,
    attempt: 1,
    leaseDeadline: '2026-12-01T12:00:00.000Z',
    items: [
      { qaId: 'qa-00000', copy: 0, index: 0 },
      { qaId: 'qa-00001', copy: 0, index: 1 },
    ],
  });
}
