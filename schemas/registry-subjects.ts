import { z } from 'zod';
import { jsonSchemaOf, RECORD_SCHEMAS, type RecordSchemaName } from './index.js';

/**
 * The compatibility rules a deployment may run its registry subjects under: BACKWARD (Confluent's
 * default, what Kafka Streams applications need: a new reader reads what the old writers wrote)
 * or stricter. NONE and FORWARD are refused: under them an upgrade could register a schema its own
 * readers cannot read old records with.
 */
export const Compatibility = z.enum(['BACKWARD', 'BACKWARD_TRANSITIVE', 'FULL', 'FULL_TRANSITIVE']);
export type Compatibility = z.infer<typeof Compatibility>;
export const DEFAULT_COMPATIBILITY: Compatibility = 'BACKWARD';

/**
 * The subject generation of each record kind. Under BACKWARD a subject only takes schemas that
 * read every record its older versions allowed, so a change that cannot be made so goes to a new
 * subject: its generation goes up, and its topic's subject is `<topic>-v<N>-value`.
 *
 * Generation 1 (`<topic>-value`) registered open content models: any property allowed. There, no
 * field can ever be added (an old writer may have put anything under the new name), and closing
 * the model is itself a narrowing. Generation 2 registers closed models (see registrySchemaOf),
 * where a new optional field, with or without a default, is a compatible change. Moving there also
 * carries the changes the registry refused on generation 1: provenance's pmid and doi, grade's
 * codes and evalMatches, llm.calls, and the rollout lease in place of the whole batch.
 *
 * Raise one kind's number only for a change the registry refuses under the deployment's rule, and
 * say why here; its zod schema must still read the records of the generations before (the
 * deserializer finds their schemas by the id in each record, whatever subject holds them).
 */
export const SUBJECT_GENERATIONS: Record<RecordSchemaName, number> = {
  article: 2,
  'qa-candidate': 2,
  'graded-qa': 2,
  // New with the global dedup (issue 30): closed models from their first version.
  'qa-band': 2,
  'band-verdict': 2,
  'classified-qa': 2,
  // New with dedupOrder (issue 30): a closed model from its first version.
  'qa-withdrawal': 2,
  'dead-letter': 2,
  'mix-state': 2,
  'rollout-lease': 2,
  'llm-reply': 2,
  'llm-call': 2,
  // New with the endpoint memory on the log (issue 52): a closed model from its first version.
  'llm-endpoint-fact': 2,
};

/** The registry subject of a topic's values (topic: its name on Kafka). */
export function subjectOf(kafkaTopic: string, schema: RecordSchemaName): string {
  return subjectOfGeneration(kafkaTopic, SUBJECT_GENERATIONS[schema]);
}

/** TopicNameStrategy (`<topic>-value`) for generation 1, `<topic>-v<N>-value` after. */
export function subjectOfGeneration(kafkaTopic: string, generation: number): string {
  return generation === 1 ? `${kafkaTopic}-value` : `${kafkaTopic}-v${generation}-value`;
}

/**
 * The JSON Schema a record kind is registered with, as text: its zod schema's input side, titled,
 * with every object's content model closed (no properties besides those named, unless the schema
 * says what others may hold, as a record of topics does). The engine writes only what its zod
 * schemas name (zod strips the rest), so the closed model says no more than what is written.
 */
export function registrySchemaOf(name: RecordSchemaName): string {
  return JSON.stringify({ title: name, ...closed(jsonSchemaOf(RECORD_SCHEMAS[name])) });
}

function closed(node: unknown): Record<string, unknown> {
  return closeObjects(node) as Record<string, unknown>;
}

function closeObjects(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(closeObjects);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) out[k] = closeObjects(v);
  if (out.type === 'object' && out.properties !== undefined && out.additionalProperties === undefined)
    out.additionalProperties = false;
  return out;
}
