import { describe, expect, it } from 'vitest';
import { pipelineTopology } from '../../processors/pipeline.js';
import { samplerProcessor } from '../../processors/sampler/sampler.js';
import { SamplerConfig } from '../../schemas/config.js';
import { loadReference } from '../../schemas/reference.js';
import type { Processor } from '../../topology/processor.js';
import { defineTopology, describeTopology, TopologyError } from '../../topology/topology.js';

const proc = (
  name: string,
  reads: string[],
  writes: string[],
  extra: Partial<Processor> = {},
): Processor => ({
  name,
  reads,
  writes,
  stores: [],
  async process() {},
  ...extra,
});

const topics = ['a', 'b', 'c', 'dlq'].map((name) => ({ name, schema: null }));

describe('topology validation', () => {
  it('accepts the pipeline of DESIGN.md', () => {
    const t = pipelineTopology();
    expect(t.topics.map((x) => x.name)).toEqual([
      'articles',
      'qa.candidates',
      'qa.bands',
      'qa.band-verdicts',
      'qa.graded',
      'qa.rejected',
      'qa.withdrawn',
      'qa.classified',
      'mix.state',
      'rollout.batches',
      'llm.journal',
      'llm.calls',
      'llm.endpoints',
      'dlq',
    ]);
    expect(t.processors.map((p) => p.name)).toEqual([
      'extract',
      'grade',
      'dedup-bands',
      'dedup',
      'classify',
      'count-sink',
      'sampler',
      'llm-calls',
      'feeder',
    ]);
  });

  it('names an unknown topic, a processor that writes nothing, and a cycle', () => {
    const attempt = () =>
      defineTopology({
        topics,
        processors: [
          proc('p1', ['a'], ['b']),
          proc('p2', ['b'], ['a']),
          proc('p3', ['c'], []),
          proc('p4', ['nope'], ['c']),
        ],
      });
    expect(attempt).toThrow(TopologyError);
    try {
      attempt();
    } catch (e) {
      const problems = (e as TopologyError).problems;
      expect(problems).toContain('processor "p4" uses unknown topic "nope"');
      expect(problems).toContain(
        'processor "p3" writes nothing: give it an output topic or an external sink',
      );
      expect(problems.find((p) => p.startsWith('cycle:'))).toBe('cycle: p1 -> [b] -> p2 -> [a] -> p1');
    }
  });

  it('refuses duplicate names, a missing dead-letter topic and bad topic settings', () => {
    expect(() =>
      defineTopology({
        topics: [
          { name: 'a', schema: null },
          { name: 'a', schema: null },
        ],
        processors: [],
      }),
    ).toThrow(/topic "a" is declared twice.*dead-letter topic "dlq" is not declared/);
    expect(() =>
      defineTopology({ topics: [...topics, { name: 'x y', partitions: 0, schema: null }], processors: [] }),
    ).toThrow(/topic #4: name: topic names use letters.*partitions/);
  });

  it('accepts an external sink in place of an output topic', () => {
    expect(() =>
      defineTopology({ topics, processors: [proc('sink', ['a'], [], { sinks: ['clickhouse:qa'] })] }),
    ).not.toThrow();
  });
});

describe('topology describe', () => {
  it('prints every topic, source and processor with its wiring', () => {
    const text = describeTopology(pipelineTopology());
    expect(text).toContain('mix.state         1 partition, compacted, schema mix-state');
    expect(text).toContain('qa.candidates ──► grade ──► qa.bands + qa.rejected');
    expect(text).toContain('qa.band-verdicts ──► dedup ──► qa.graded + qa.rejected + qa.withdrawn');
    expect(text).toContain('(ingest) ──► articles + dlq');
    expect(text).toMatch(/sampler {2}\(placeholder: not run\)[\s\S]*stores: mix/);
    // Wired, the sampler shows its timer.
    const sampler = samplerProcessor({
      config: SamplerConfig.parse({}),
      reference: loadReference(),
      taxonomy: { name: 'MeSH Biology', meshYear: 2024 },
    });
    const wired = describeTopology(
      defineTopology({ topics: pipelineTopology().topics, processors: [sampler] }),
    );
    expect(wired).toMatch(/sampler\n[\s\S]*timer every 500 ms/);
  });
});
