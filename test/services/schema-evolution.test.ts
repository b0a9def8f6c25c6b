import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type Compatibility, SchemaRegistryClient } from '@confluentinc/schemaregistry';
import { describe, expect, it } from 'vitest';
import { RECORD_SCHEMA_NAMES, type RecordSchemaName } from '../../schemas/index.js';
import { registrySchemaOf, SUBJECT_GENERATIONS } from '../../schemas/registry-subjects.js';
import { SCHEMA_REGISTRY } from './env.js';

/**
 * What each record kind registered when its subject generation was last recorded
 * (test/fixtures/registered-schemas.json). A schema change must be one the registry takes under
 * BACKWARD on that version, or come with a new generation (a new subject) and a new snapshot:
 * this test is where CI says which.
 */
const SNAPSHOT: Record<string, { generation: number; schema: unknown }> = JSON.parse(
  readFileSync(new URL('../fixtures/registered-schemas.json', import.meta.url), 'utf8'),
);

describe('schema changes under BACKWARD (issue 32)', () => {
  it.each(RECORD_SCHEMA_NAMES)(
    '%s: the code registers on its recorded version, or in a new subject',
    async (name) => {
      const recorded = SNAPSHOT[name];
      expect(
        recorded,
        `no recorded schema for ${name}: add it to test/fixtures/registered-schemas.json`,
      ).toBeDefined();
      if (SUBJECT_GENERATIONS[name as RecordSchemaName] > recorded!.generation) return;
      const registry = new SchemaRegistryClient({ baseURLs: [SCHEMA_REGISTRY] });
      const subject = `evolution-${randomUUID().slice(0, 8)}-${name}-value`;
      try {
        await registry.register(subject, { schemaType: 'JSON', schema: JSON.stringify(recorded!.schema) });
        await registry.updateCompatibility(subject, 'BACKWARD' as Compatibility);
        const ok = await registry.testSubjectCompatibility(subject, {
          schemaType: 'JSON',
          schema: registrySchemaOf(name as RecordSchemaName),
        });
        expect(
          ok,
          `${name}: the registry refuses this change under BACKWARD: make it compatible (a new optional field) or raise its generation in schemas/registry-subjects.ts`,
        ).toBe(true);
      } finally {
        await registry.deleteSubject(subject).catch(() => {});
      }
    },
  );
});
