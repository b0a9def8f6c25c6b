import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SchemaRegistryClient } from '@confluentinc/schemaregistry';
import { describe, expect, it, onTestFinished } from 'vitest';
import { registrySchemaOf, subjectOf } from '../../schemas/registry-subjects.js';
import { cli } from '../e2e/helpers.js';
import { KAFKA, SCHEMA_REGISTRY } from './env.js';

/**
 * `bioalchemy schemas --check` against the real registry (issue 32): what a start of this code
 * would do to each subject under the deployment's policy, before it is deployed. It registers
 * nothing; a subject that would refuse the new schema is listed as `breaks`, with exit status 3.
 */
describe('bioalchemy schemas --check (Schema Registry)', () => {
  it('lists each subject as new, unchanged or breaks, and exits 3 when one would refuse the new schema', async () => {
    const app = `check-${randomUUID().slice(0, 8)}`;
    const registry = new SchemaRegistryClient({ baseURLs: [SCHEMA_REGISTRY] });
    const dir = mkdtempSync(join(tmpdir(), 'bioalchemy-check-'));
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        log: `kafka://${KAFKA}?registry=${encodeURIComponent(SCHEMA_REGISTRY)}&compatibility=BACKWARD`,
        app,
      }),
    );
    onTestFinished(async () => {
      rmSync(dir, { recursive: true, force: true });
      for (const s of await registry.getAllSubjects())
        if (s.startsWith(`${app}.`)) await registry.deleteSubject(s).catch(() => {});
    });
    // qa.candidates holds this code's schema; articles one with a field this code no longer writes:
    // under BACKWARD (closed content models) removing a field is refused, old records may hold it.
    const candidates = subjectOf(`${app}.qa.candidates`, 'qa-candidate');
    await registry.register(candidates, { schemaType: 'JSON', schema: registrySchemaOf('qa-candidate') });
    const articles = subjectOf(`${app}.articles`, 'article');
    const withExtra = JSON.parse(registrySchemaOf('article'));
    withExtra.properties.retracted = { type: 'boolean' };
    await registry.register(articles, { schemaType: 'JSON', schema: JSON.stringify(withExtra) });
    const before = await registry.getAllSubjects();

    const check = cli(['schemas', '--check', '--config', config]);
    expect(check.status, check.stderr).toBe(3);
    const verdicts = Object.fromEntries(
      check.stdout
        .split('\n')
        .filter((l) => l.startsWith(`${app}.`))
        .map((l) => {
          const [subject, , verdict] = l.split(/\s+/);
          return [subject, verdict];
        }),
    );
    expect(verdicts[articles]).toBe('breaks');
    expect(verdicts[candidates]).toBe('unchanged');
    expect(verdicts[subjectOf(`${app}.qa.graded`, 'graded-qa')]).toBe('new');
    expect(check.stderr).toContain(articles);
    // Nothing registered, no scratch subject left behind.
    expect((await registry.getAllSubjects()).sort()).toEqual(before.sort());

    const json = cli(['schemas', '--check', '--json', '--config', config]);
    const rows = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { subject: string; verdict: string });
    expect(rows.find((r) => r.subject === articles)!.verdict).toBe('breaks');
  });
});
