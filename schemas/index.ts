import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { Article } from './article.js';
import { Config } from './config.js';
import { DeadLetter } from './dead-letter.js';
import { BandVerdict, QaBand, QaWithdrawal } from './dedup.js';
import { EndpointFactRecord, LlmCallRecord, LlmJournalReply } from './llm.js';
import { MixState } from './mix-state.js';
import { ClassifiedQa, GradedQa, QaCandidate } from './qa.js';
import { RolloutLeaseRecord } from './rollout-batch.js';

/** Every record kind that travels on a topic, by the name topics refer to it with. */
export const RECORD_SCHEMAS = {
  article: Article,
  'qa-candidate': QaCandidate,
  'graded-qa': GradedQa,
  'qa-band': QaBand,
  'band-verdict': BandVerdict,
  'classified-qa': ClassifiedQa,
  'qa-withdrawal': QaWithdrawal,
  'dead-letter': DeadLetter,
  'mix-state': MixState,
  'rollout-lease': RolloutLeaseRecord,
  'llm-reply': LlmJournalReply,
  'llm-call': LlmCallRecord,
  'llm-endpoint-fact': EndpointFactRecord,
} as const;
export type RecordSchemaName = keyof typeof RECORD_SCHEMAS;
export const RECORD_SCHEMA_NAMES = Object.keys(RECORD_SCHEMAS) as RecordSchemaName[];

export function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  return z.toJSONSchema(schema, { io: 'input', target: 'draft-7' }) as Record<string, unknown>;
}

/** Writes one JSON Schema per record (and the config) into dir; returns the files written. */
export function exportJsonSchemas(dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  const all: [string, z.ZodType][] = [...Object.entries(RECORD_SCHEMAS), ['config', Config]];
  return all.map(([name, schema]) => {
    const file = join(dir, `${name}.schema.json`);
    writeFileSync(file, `${JSON.stringify({ title: name, ...jsonSchemaOf(schema) }, null, 2)}\n`);
    return file;
  });
}

export * from './article.js';
export * from './config.js';
export * from './connection.js';
export * from './dead-letter.js';
export * from './dedup.js';
export * from './ids.js';
export * from './mix-state.js';
export * from './provenance.js';
export * from './qa.js';
export * from './rollout-batch.js';
export * from './taxonomy.js';
