import { randomUUID } from 'node:crypto';
import {
  type Compatibility as ClientCompatibility,
  type ClientConfig,
  RestError,
  SchemaRegistryClient,
} from '@confluentinc/schemaregistry';
import type { RecordSchemaName } from '../../../schemas/index.js';
import {
  type Compatibility,
  registrySchemaOf,
  SUBJECT_GENERATIONS,
  subjectOf,
  subjectOfGeneration,
} from '../../../schemas/registry-subjects.js';
import type { TopicSpec } from '../../topology.js';
import type { KafkaNames } from './names.js';

/**
 * What registering a topic's schema at start would do: `new` (the subject is not there yet),
 * `unchanged` (its latest version is this schema), `compatible` (a new version the rule takes),
 * `breaks` (the rule refuses it: the start would stop).
 */
export type SubjectVerdict = 'new' | 'unchanged' | 'compatible' | 'breaks';

export interface SubjectCheck {
  /** The topic, by the engine's name. */
  readonly topic: string;
  readonly subject: string;
  readonly schema: RecordSchemaName;
  readonly verdict: SubjectVerdict;
  /** The subject's own rule on the registry now; null where it has none (or is not there yet). */
  readonly rule: string | null;
  /** Subjects of earlier generations of this topic the registry holds: left as they are, their records still read. */
  readonly earlier: readonly string[];
}

/**
 * Compares the code's schemas with the registry's latest version of each subject, judged by the
 * deployment's policy (the rule a start sets on each subject before it registers), without
 * registering anything. Where a subject's rule is not yet the policy, the registry is asked on
 * scratch subjects judged by the policy (see underPolicy).
 */
export async function checkSubjects(
  registry: ClientConfig,
  names: KafkaNames,
  topics: readonly TopicSpec[],
  policy: Compatibility,
): Promise<SubjectCheck[]> {
  const client = new SchemaRegistryClient(registry);
  const held = new Set(await client.getAllSubjects());
  const out: SubjectCheck[] = [];
  for (const t of topics) {
    if (!t.schema) continue;
    const topic = names.topic(t.name);
    const subject = subjectOf(topic, t.schema);
    const schema = registrySchemaOf(t.schema);
    const earlier = Array.from({ length: SUBJECT_GENERATIONS[t.schema] - 1 }, (_, i) =>
      subjectOfGeneration(topic, i + 1),
    ).filter((s) => held.has(s));
    const base = { topic: t.name, subject, schema: t.schema, earlier };
    if (!held.has(subject)) {
      out.push({ ...base, verdict: 'new', rule: null });
      continue;
    }
    const rule = await ownRule(client, subject);
    const latest = await client.getLatestSchemaMetadata(subject);
    let verdict: SubjectVerdict;
    if (sameJson(latest.schema, schema)) verdict = 'unchanged';
    else {
      const info = { schemaType: 'JSON', schema };
      const ok =
        rule === policy
          ? await client.testSubjectCompatibility(subject, info)
          : await underPolicy(client, subject, policy, (scratch) =>
              client.testSubjectCompatibility(scratch, info),
            );
      verdict = ok ? 'compatible' : 'breaks';
    }
    out.push({ ...base, verdict, rule });
  }
  return out;
}

async function ownRule(client: SchemaRegistryClient, subject: string): Promise<string | null> {
  try {
    return (await client.getCompatibility(subject)) ?? null;
  } catch (e) {
    if (e instanceof RestError && e.status === 404) return null;
    throw e;
  }
}

/**
 * Asks `ask` of scratch subjects judged by `policy`, each holding one version the policy compares
 * with (the latest, or every version for a transitive rule), deleted after: a transitive rule is
 * the pairwise rule against every version, and a one-version subject needs no history copied
 * under rules it was not taken under.
 */
async function underPolicy(
  client: SchemaRegistryClient,
  subject: string,
  policy: Compatibility,
  ask: (scratch: string) => Promise<boolean>,
): Promise<boolean> {
  const versions = await client.getAllVersions(subject);
  const compared = policy.endsWith('_TRANSITIVE') ? versions : versions.slice(-1);
  const pairwise = policy.replace('_TRANSITIVE', '') as ClientCompatibility;
  for (const version of compared) {
    const scratch = `bioalchemy-check-${randomUUID().slice(0, 8)}-${subject}`;
    try {
      const { schema, schemaType } = await client.getSchemaMetadata(subject, version);
      await client.register(scratch, { schema, schemaType }, false);
      await client.updateCompatibility(scratch, pairwise);
      if (!(await ask(scratch))) return false;
    } finally {
      await client.deleteSubject(scratch, false).catch(() => {});
      await client.deleteSubject(scratch, true).catch(() => {});
    }
  }
  return true;
}

function sameJson(a: string, b: string): boolean {
  try {
    return JSON.stringify(JSON.parse(a)) === JSON.stringify(JSON.parse(b));
  } catch {
    return false;
  }
}
