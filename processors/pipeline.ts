import type { InputRecord, Processor } from '../topology/processor.js';
import { defineTopology, type Topology } from '../topology/topology.js';

/** A processor whose issue has not landed: it is part of the graph but the runner does not start it. */
function placeholder(def: Omit<Processor, 'process' | 'placeholder'>): Processor {
  return {
    ...def,
    placeholder: true,
    async process(_batch: readonly InputRecord[]) {
      throw new Error(`processor "${def.name}" is not implemented yet`);
    },
  };
}

/** The BioAlchemy pipeline of DESIGN.md: every arrow a topic, every box a processor. */
export function pipelineTopology(opts: { partitions?: number } = {}): Topology {
  const partitions = opts.partitions ?? 4;
  return defineTopology({
    topics: [
      {
        name: 'articles',
        partitions,
        schema: 'article',
        description: 'normalised articles from every source',
      },
      {
        name: 'qa.candidates',
        partitions,
        schema: 'qa-candidate',
        description: 'extracted MCQ and free-form QA',
      },
      { name: 'qa.graded', partitions, schema: 'graded-qa', description: 'accepted by the judge and checks' },
      { name: 'qa.rejected', partitions, schema: 'graded-qa', description: 'refused, with reasons' },
      { name: 'qa.classified', partitions, schema: 'classified-qa', description: 'with MeSH Biology labels' },
      {
        name: 'mix.state',
        partitions: 1,
        compacted: true,
        schema: 'mix-state',
        description: 'latest training mix',
      },
      {
        name: 'rollout.batches',
        partitions,
        schema: 'rollout-batch',
        description: 'batches leased to trainers',
      },
      {
        name: 'dlq',
        partitions: 1,
        schema: 'dead-letter',
        description: 'every dropped input, with a reason',
      },
    ],
    sources: [
      {
        name: 'ingest',
        description:
          'JATS, MEDLINE, JSONL, text, Markdown, PDF files; folder watch; PubMed/Europe PMC/bioRxiv pollers',
        writes: ['articles', 'dlq'],
      },
    ],
    processors: [
      placeholder({
        name: 'extract',
        description: 'LLM: passage relevance, MCQ generation and quality, free-form QA extraction',
        reads: ['articles'],
        writes: ['qa.candidates'],
        stores: ['llm-cache', 'seen'],
      }),
      placeholder({
        name: 'grade',
        description: 'LLM judge and deterministic checks: quality, difficulty, answerability, verifiability',
        reads: ['qa.candidates'],
        writes: ['qa.graded', 'qa.rejected'],
        stores: ['llm-cache'],
      }),
      placeholder({
        name: 'classify',
        description: 'LLM multi-label MeSH Biology classification, beside the MeSH-heading signal',
        reads: ['qa.graded'],
        writes: ['qa.classified'],
        stores: ['llm-cache'],
      }),
      placeholder({
        name: 'count-sink',
        description: 'QA rows and topic counts into ClickHouse, deduplicated by QA id',
        reads: ['qa.classified'],
        writes: [],
        stores: [],
        sinks: ['clickhouse:qa'],
      }),
      placeholder({
        name: 'sampler',
        description:
          'α-smoothed target mix, per-topic quotas, TVD and yield; recomputed on new data and on a timer',
        reads: ['qa.classified'],
        writes: ['mix.state'],
        stores: ['counts'],
        punctuate: { everyMs: 60_000, run: async () => {} },
      }),
      placeholder({
        name: 'feeder',
        description: 'rollout batches leased to trainer ranks; acks carry rewards back to ClickHouse',
        reads: ['mix.state', 'qa.classified'],
        writes: ['rollout.batches'],
        stores: ['leases', 'pool'],
        sinks: ['http:feeder', 'clickhouse:rewards'],
      }),
    ],
  });
}
