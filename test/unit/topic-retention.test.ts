import { describe, expect, it } from 'vitest';
import { pipelineTopology } from '../../processors/pipeline.js';
import { EmbeddedRuntime } from '../../topology/runtime/embedded.js';
import type { TopicSpec } from '../../topology/topology.js';

const DAY = 24 * 3600 * 1000;

describe('a topic retention the topology sets', () => {
  it('reaches a data folder made before the topic had one: its old records go at the next maintenance', async () => {
    const runtime = EmbeddedRuntime.open(':memory:');
    const spec = (retentionMs: number | null): TopicSpec => ({
      name: 'leases',
      partitions: 1,
      compacted: false,
      retentionMs,
      schema: null,
      description: '',
    });
    await runtime.ensureTopics([spec(null)]);
    await runtime.append([{ topic: 'leases', key: null, value: '{"n":1}' }]);
    // Kept forever: a week on, nothing goes.
    expect(await runtime.maintain(Date.now() + 8 * DAY)).toBe(0);
    await runtime.ensureTopics([spec(7 * DAY)]);
    expect(await runtime.maintain(Date.now() + DAY)).toBe(0);
    expect(await runtime.maintain(Date.now() + 8 * DAY)).toBe(1);
    expect(await runtime.endOffsets('leases')).toEqual([1]);
    await runtime.close();
  });

  it("keeps the feeder's lease records a week, the pipeline's data forever", () => {
    const retention = new Map(pipelineTopology().topics.map((t) => [t.name, t.retentionMs]));
    expect(retention.get('rollout.batches')).toBe(7 * DAY);
    for (const data of ['articles', 'qa.candidates', 'qa.graded', 'qa.classified'])
      expect(retention.get(data)).toBeNull();
  });
});
