import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { Connection } from './connection.js';
import { DashboardConfig } from './dashboard.js';
import { FeederConfig, ServerConfig } from './feeder.js';
import { LlmConfig } from './llm.js';
import { HeldOut } from './mix-state.js';
import { PollerConfig } from './pollers.js';
import { GradeAccept } from './qa.js';

export const ProcessorConfig = z
  .object({
    batchSize: z.number().int().positive().default(256),
    concurrency: z
      .number()
      .int()
      .positive()
      .default(16)
      .describe('inputs whose work is in flight at once (the LLM stages keep them in flight across steps)'),
    commitIntervalMs: z
      .number()
      .int()
      .positive()
      .default(100)
      .describe('how long one transaction takes steps before it commits (Kafka Streams commit.interval.ms)'),
  })
  .strict();

export const SamplerConfig = z
  .object({
    alpha: z
      .number()
      .min(0)
      .max(1)
      .default(0.5)
      .describe('smoothing exponent: p_c ∝ n_c^α (the paper: 0.5; 1 keeps the reference)'),
    seed: z.number().int().nonnegative().default(0).describe('fixes which items are selected'),
    repeatCap: z.number().int().min(1).max(100).default(1).describe('most copies of one item in the mix'),
    maxSize: z.number().int().positive().nullable().default(null).describe('most selected copies'),
    minTopicItems: z
      .number()
      .int()
      .min(1)
      .default(1)
      .describe('a reference category with fewer eligible items is reported starving and not served'),
    intervalMs: z
      .number()
      .int()
      .positive()
      .default(500)
      .describe('how often the timer recomputes the mix when new items arrived since the last one'),
    reference: z
      .string()
      .optional()
      .describe('path of a reference JSON file replacing PubMed biology 2020-2024'),
    heldOut: HeldOut.default(HeldOut.parse({})).describe('items kept out of training for evaluation'),
    rewardPolicy: z
      .object({
        enabled: z.boolean().default(false),
        mastered: z.number().min(0).max(1).default(0.8).describe('mean reward at which a topic is mastered'),
        tvdBudget: z
          .number()
          .min(0)
          .max(1)
          .default(0.05)
          .describe('most total variation distance the moved target may be from the α-target'),
        minRewards: z
          .number()
          .int()
          .positive()
          .default(50)
          .describe('rewards a topic needs before its mean counts'),
        refreshMs: z.number().int().positive().default(30_000).describe('how often mean rewards are read'),
      })
      .strict()
      .default({ enabled: false, mastered: 0.8, tvdBudget: 0.05, minRewards: 50, refreshMs: 30_000 })
      .describe(
        'beyond the paper, opt-in: give the weight of mastered topics to the ones the model has not learnt',
      ),
  })
  .strict();
export type SamplerConfig = z.infer<typeof SamplerConfig>;

/** The verifier model's prompt formats (llm/prompts/verify.ts). */
export const VerifierPrompt = z.enum(['plain', 'compass-verifier', 'general-verifier']);
export type VerifierPrompt = z.infer<typeof VerifierPrompt>;

/**
 * The reward's verifier model, asked only about outputs the rules leave undecided (neither the
 * reference nor a conflicting answer found). Its endpoint and model are the LLM stage `verify`
 * (llm.stages.verify, else the global llm block).
 */
export const RewardVerifierConfig = z
  .object({
    deadlineMs: z
      .number()
      .int()
      .positive()
      .default(5_000)
      .describe("longest a reward waits for the verifier; past it the rules' 0 stands (verifier-timeout)"),
    concurrency: z.number().int().positive().default(8).describe('verifier calls in flight at once'),
    prompt: VerifierPrompt.default('plain').describe('plain, compass-verifier or general-verifier'),
    cacheEntries: z
      .number()
      .int()
      .positive()
      .default(10_000)
      .describe('verdicts kept in memory by (reference, answer span); the journal keeps the rest'),
    journalEntries: z
      .number()
      .int()
      .positive()
      .default(100_000)
      .describe('verdicts the journal keeps on disk, the least recently used dropped first'),
    journal: z
      .string()
      .min(1)
      .optional()
      .describe("the verifier's response journal (SQLite); unset: verifier.sqlite beside the feeder's file"),
  })
  .strict();
export type RewardVerifierConfig = z.infer<typeof RewardVerifierConfig>;

export const RewardConfig = z
  .object({
    verifier: RewardVerifierConfig.optional().describe(
      'opt-in: a verifier model for outputs the rules cannot decide; unset, the rules alone',
    ),
  })
  .strict();
export type RewardConfig = z.infer<typeof RewardConfig>;

export const Config = z
  .object({
    log: z
      .string()
      .default('file:./data')
      .describe('file:DIR for the embedded log, or kafka://host:port[,host:port]?client=kafkajs|rdkafka'),
    app: z
      .string()
      .regex(/^[A-Za-z0-9_-]+$/)
      .default('bioalchemy')
      .describe(
        "on Kafka, Kafka Streams' application.id: prefixes every topic, changelog, consumer group and transactional id, so pipelines share a cluster",
      ),
    clickhouse: z
      .string()
      .default('chdb:./data/chdb')
      .describe('chdb:DIR for in-process ClickHouse, or http(s)://user@host:port/database'),
    // One way to set the registry: on the log URL. The key was once accepted and did nothing.
    schemaRegistry: z
      .never({
        error: 'the Schema Registry is set on the log URL: kafka://host:port?registry=http://host:8081',
      })
      .optional(),
    connection: Connection.default(Connection.parse({})).describe(
      'TLS and credentials of the Kafka brokers, the Schema Registry and ClickHouse; secrets by name only',
    ),
    llm: LlmConfig.default(LlmConfig.parse({})).describe(
      'LLM endpoint or local model, per-stage limits and prices, budget',
    ),
    extract: z
      .object({
        maxPassages: z
          .number()
          .int()
          .positive()
          .default(8)
          .describe('passages of one article sent to the model'),
        passageTokens: z.number().int().min(50).default(400).describe('token budget of one passage'),
      })
      .strict()
      .default({ maxPassages: 8, passageTokens: 400 }),
    grade: z
      .object({
        nearDuplicate: z
          .number()
          .min(0.5)
          .max(1)
          .default(0.8)
          .describe(
            'estimated Jaccard similarity of question shingles at which a question is a near-duplicate',
          ),
        accept: GradeAccept.default(GradeAccept.parse({})).describe(
          "least judge scores (1-5) of an accepted QA; the judge's prompt states the same rule",
        ),
        allowYesNo: z
          .boolean()
          .default(false)
          .describe('accept free-form answers yes/no or true/false (a guess gets them right half the time)'),
        evalSets: z
          .array(z.string().min(1))
          .default([])
          .describe(
            "benchmark eval sets (JSON lines or parquet of {id, question, options?, pmid?, doi?}), or folders of them: a candidate sharing a word 13-gram with an item or near-duplicating its question is rejected `contaminated`, one from an item's source article `eval-source`; files are looked at again while running",
          ),
        evalSetMaxMb: z
          .number()
          .positive()
          .default(64)
          .describe('largest eval set file read; a larger one is an error'),
        evalSetsPollMs: z
          .number()
          .int()
          .positive()
          .default(2000)
          .describe('least time between two looks at the eval sets for new or changed files'),
      })
      .strict()
      .default({
        nearDuplicate: 0.8,
        accept: GradeAccept.parse({}),
        allowYesNo: false,
        evalSets: [],
        evalSetMaxMb: 64,
        evalSetsPollMs: 2000,
      }),
    classify: z
      .object({
        minConfidence: z
          .number()
          .min(0)
          .max(1)
          .default(0.5)
          .describe('a label under this confidence is dropped; a QA left without one is counted unlabelled'),
      })
      .strict()
      .default({ minConfidence: 0.5 }),
    taxonomy: z.string().optional().describe('path of a taxonomy JSON file replacing MeSH Biology 2024'),
    sampler: SamplerConfig.default(SamplerConfig.parse({})).describe('the α-smoothed training mix'),
    metricsPort: z
      .number()
      .int()
      .min(0)
      .max(65535)
      .optional()
      .describe('`run` serves /metrics, /livez and /readyz on this port; unset, none'),
    metricsHost: z
      .string()
      .min(1)
      .default('127.0.0.1')
      .describe(
        'the address of /metrics and the probes: 0.0.0.0 in a container, for the kubelet and Prometheus',
      ),
    processors: z.record(z.string(), ProcessorConfig).default({}),
    sources: z.array(PollerConfig).default([]).describe('literature pollers run by `run` and `poll`'),
    server: ServerConfig.default(ServerConfig.parse({})).describe('the feeder HTTP API `run` serves'),
    dashboard: DashboardConfig.default(DashboardConfig.parse({})).describe(
      'the dashboard and /metrics `run` and `dashboard` serve',
    ),
    feeder: FeederConfig.default(FeederConfig.parse({})).describe('leases, batches, prompt templates'),
    reward: RewardConfig.default({}).describe("the feeder's /v1/reward: rules, and an opt-in verifier model"),
  })
  .strict()
  .superRefine((c, ctx) => {
    // Every key does something: security for a service the config does not use is a mistake.
    const kafka = c.log.startsWith('kafka://');
    const { tls, sasl } = c.connection.kafka;
    if (!kafka && (tls || sasl))
      ctx.addIssue({ code: 'custom', path: ['connection', 'kafka'], message: 'applies to a kafka:// log' });
    if (c.connection.registry && !(kafka && /[?&]registry=/.test(c.log)))
      ctx.addIssue({
        code: 'custom',
        path: ['connection', 'registry'],
        message: 'applies to the Schema Registry the log URL names (kafka://...?registry=https://...)',
      });
    if (c.connection.clickhouse.caFile && !/^https:\/\//i.test(c.clickhouse))
      ctx.addIssue({
        code: 'custom',
        path: ['connection', 'clickhouse', 'caFile'],
        message: 'applies to a ClickHouse server over https://',
      });
  });
export type Config = z.infer<typeof Config>;

/** Reads and validates a config file; the error names the file and each bad field. */
export function loadConfig(path?: string): Config {
  if (!path) return Config.parse({});
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new Error(`config ${path}: ${(e as Error).message}`);
  }
  const parsed = Config.safeParse(raw);
  if (!parsed.success) throw new Error(`config ${path}: ${formatIssues(parsed.error)}`);
  return parsed.data;
}

/** One line naming each failing field: `items.0.answer: a multiple-choice answer is one option letter`. */
export function formatIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${reasonOf(i)}`).join('; ');
}

/** An issue's message; a record key's says what the key lacks (zod says only "Invalid key in record"). */
function reasonOf(issue: z.core.$ZodIssue): string {
  if (issue.code !== 'invalid_key') return issue.message;
  return `${issue.message}: ${issue.issues.map((i) => i.message).join('; ')}`;
}
