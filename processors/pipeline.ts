import type { Registry } from 'prom-client';
import type { Analytics } from '../analytics/clickhouse.js';
import { ENDPOINTS_TOPIC, JOURNAL_TOPIC, LLM_CALLS_TOPIC, type Llm } from '../llm/index.js';
import { Config, ProcessorConfig } from '../schemas/config.js';
import type { Taxonomy } from '../schemas/taxonomy.js';
import type { InputRecord, Processor } from '../topology/processor.js';
import { defineTopology, type Topology } from '../topology/topology.js';
import { classifyProcessor } from './classify.js';
import { COUNT_SINK, countSinkProcessor } from './count-sink.js';
import { DEDUP_BANDS, dedupBandsProcessor } from './dedup/bands.js';
import { DEDUP_JOIN, dedupJoinProcessor } from './dedup/join.js';
import { extractProcessor } from './extract.js';
import { FEEDER } from './feeder/processor.js';
import { gradeProcessor, gradeRejections } from './grade.js';
import { LLM_CALLS_SINK, llmCallsSinkProcessor } from './llm-calls.js';
import { SAMPLER, type SamplerOptions, samplerProcessor } from './sampler/sampler.js';

/** grade.nearDuplicate by default, for a topology built without the LLM stages' config. */
const DEFAULT_NEAR_DUPLICATE = Config.parse({}).grade.nearDuplicate;

/** What the LLM stages run on; without it they are declared in the graph but not run. */
export interface LlmStages {
  readonly llm: Llm;
  readonly taxonomy: Taxonomy;
  readonly config: Pick<Config, 'extract' | 'grade' | 'classify' | 'processors'>;
  readonly registry?: Registry;
}

/**
 * The processors that need ClickHouse: the count sink, the sampler (it reads mastery), the
 * llm-calls sink and the feeder (rewards). A process that runs none of them never opens it.
 */
export const CLICKHOUSE_PROCESSORS: readonly string[] = [
  COUNT_SINK.name,
  SAMPLER.name,
  LLM_CALLS_SINK.name,
  'feeder',
];

/** The LLM stages: a process that runs one of them opens the LLM. */
export const LLM_PROCESSORS: readonly string[] = ['extract', 'grade', 'classify'];

/**
 * What a process running these processors reads and appends outside their tasks: the LLM stages
 * read and append the response journal and the endpoint facts, and append their calls' accounting.
 * With the topology, what `kafka acls` computes a role's ACLs from.
 */
export function directTopicAccess(processors: readonly string[]): { reads: string[]; writes: string[] } {
  if (!processors.some((n) => LLM_PROCESSORS.includes(n))) return { reads: [], writes: [] };
  return {
    reads: [JOURNAL_TOPIC.name, ENDPOINTS_TOPIC.name],
    writes: [JOURNAL_TOPIC.name, ENDPOINTS_TOPIC.name, LLM_CALLS_TOPIC.name],
  };
}

/**
 * The pipeline's CPU work: the LLM stages and the dedup between grade and classify. `run` serving
 * the feeder runs them in a process of their own (cli/pipeline-process.ts); they open no ClickHouse.
 */
export const PIPELINE_PROCESSORS: readonly string[] = [
  'extract',
  'grade',
  DEDUP_BANDS.name,
  DEDUP_JOIN.name,
  'classify',
];

/** What the count sink, the llm-calls sink and the sampler run on; without it they are declared but not run. */
export interface CountStages {
  readonly analytics: Analytics;
  readonly sampler: Omit<SamplerOptions, 'analytics'>;
}

/** A processor in the graph that the runner does not start: its issue has not landed, or it needs what `run` wires. */
function placeholder(def: Omit<Processor, 'process' | 'placeholder'>): Processor {
  return {
    ...def,
    placeholder: true,
    async process(_batch: readonly InputRecord[]) {
      throw new Error(
        `processor "${def.name}" is not run: its issue has not landed, or it needs what run wires`,
      );
    },
  };
}

/** An LLM stage in a topology built without an LLM (to describe it, or to ingest): declared, never run. */
function needsLlm(def: Pick<Processor, 'name' | 'reads' | 'writes' | 'stores'>): Processor {
  return { ...placeholder(def), description: 'LLM stage: `run` wires it to the configured LLM' };
}

/** The BioAlchemy pipeline of DESIGN.md: every arrow a topic, every box a processor. */
export function pipelineTopology(
  opts: { partitions?: number; stages?: LlmStages; counts?: CountStages; feeder?: Processor } = {},
): Topology {
  const partitions = opts.partitions ?? 4;
  const { stages, counts } = opts;
  const inFlight = (name: string) =>
    stages?.config.processors[name]?.concurrency ?? ProcessorConfig.parse({}).concurrency;
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
      {
        name: 'qa.bands',
        partitions,
        schema: 'qa-band',
        description: 'accepted by the judge and checks, once per MinHash band, keyed by band key',
      },
      {
        name: 'qa.band-verdicts',
        partitions,
        schema: 'band-verdict',
        description: "each band owner's answer: does the band hold a near-duplicate? keyed by QA id",
      },
      {
        name: 'qa.graded',
        partitions,
        schema: 'graded-qa',
        description: 'accepted by the judge and checks, and no duplicate of any QA accepted before',
      },
      { name: 'qa.rejected', partitions, schema: 'graded-qa', description: 'refused, with reasons' },
      {
        name: 'qa.withdrawn',
        partitions,
        schema: 'qa-withdrawal',
        description:
          'accepted QA taken back: a duplicate of one that comes before it, which reached dedup later',
      },
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
        schema: 'rollout-lease',
        // A record of each lease (its items by qa id): kept forever, it would grow with every
        // epoch of every run. The feeder's own file is the truth of leases.
        retentionMs: 7 * 24 * 3600 * 1000,
        description: 'leases of rollout batches to trainer ranks: items by qa id (kept a week)',
      },
      JOURNAL_TOPIC,
      LLM_CALLS_TOPIC,
      ENDPOINTS_TOPIC,
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
      {
        name: 'llm-journal',
        description:
          'every LLM reply, appended the moment it arrives, outside the steps (llm/journal/log.ts)',
        writes: [JOURNAL_TOPIC.name],
      },
      {
        name: 'llm-endpoints',
        description:
          'what the LLM layer learns of an endpoint, appended when learned (llm/endpoint-memory.ts)',
        writes: [ENDPOINTS_TOPIC.name],
      },
      {
        name: 'llm-accounting',
        description: 'every LLM request as accounted, from each stage worker (llm/calls.ts)',
        writes: [LLM_CALLS_TOPIC.name],
      },
    ],
    processors: [
      stages
        ? extractProcessor({
            llm: stages.llm,
            inFlight: inFlight('extract'),
            ...stages.config.extract,
            ...(stages.registry ? { registry: stages.registry } : {}),
          })
        : needsLlm({ name: 'extract', reads: ['articles'], writes: ['qa.candidates'], stores: [] }),
      stages
        ? gradeProcessor({
            llm: stages.llm,
            inFlight: inFlight('grade'),
            ...stages.config.grade,
            ...(stages.registry ? { registry: stages.registry } : {}),
          })
        : needsLlm({
            name: 'grade',
            reads: ['qa.candidates'],
            writes: ['qa.bands', 'qa.rejected'],
            stores: ['dedup'],
          }),
      dedupBandsProcessor({ threshold: stages?.config.grade.nearDuplicate ?? DEFAULT_NEAR_DUPLICATE }),
      dedupJoinProcessor({ rejections: gradeRejections(stages?.registry) }),
      stages
        ? classifyProcessor({
            llm: stages.llm,
            inFlight: inFlight('classify'),
            taxonomy: stages.taxonomy,
            ...stages.config.classify,
          })
        : needsLlm({ name: 'classify', reads: ['qa.graded'], writes: ['qa.classified'], stores: [] }),
      counts ? countSinkProcessor({ analytics: counts.analytics }) : placeholder(COUNT_SINK),
      counts ? samplerProcessor({ ...counts.sampler, analytics: counts.analytics }) : placeholder(SAMPLER),
      counts ? llmCallsSinkProcessor({ analytics: counts.analytics }) : placeholder(LLM_CALLS_SINK),
      // The feeder needs what `run` wires (its file, the HTTP server): processors/feeder/processor.ts.
      opts.feeder ?? placeholder(FEEDER),
    ],
  });
}
