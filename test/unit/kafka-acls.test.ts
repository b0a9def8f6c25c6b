import { describe, expect, it } from 'vitest';
import { directTopicAccess, pipelineTopology } from '../../processors/pipeline.js';
import { aclsFor, type KafkaAcl, kafkaAclsCommands } from '../../topology/runtime/kafka/acls.js';
import { KafkaNames } from '../../topology/runtime/kafka/names.js';

const topology = pipelineTopology();
const names = new KafkaNames('prod');
const PRINCIPAL = 'User:pipeline';
const all = topology.processors.map((p) => p.name);

const acl = (
  resourceType: KafkaAcl['resourceType'],
  name: string,
  operation: KafkaAcl['operation'],
  patternType: KafkaAcl['patternType'] = 'LITERAL',
): string => `${resourceType} ${patternType} ${name} ${operation}`;
const flat = (acls: readonly KafkaAcl[]) =>
  acls.map((a) => acl(a.resourceType, a.name, a.operation, a.patternType));

describe('kafka acls: a role computed from the topology', () => {
  it('every topic each processor reads or writes is covered, with its group and transactional ids', () => {
    const acls = flat(aclsFor(topology, names, PRINCIPAL, { processors: all, ...directTopicAccess(all) }));
    for (const p of topology.processors) {
      for (const t of p.reads) expect(acls).toContain(acl('TOPIC', `prod.${t}`, 'READ'));
      for (const t of [...p.writes, topology.deadLetterTopic])
        expect(acls).toContain(acl('TOPIC', `prod.${t}`, 'WRITE'));
      for (const s of p.stores)
        for (const op of ['READ', 'WRITE'] as const)
          expect(acls).toContain(acl('TOPIC', `prod.${p.name}-${s}-changelog`, op));
      if (p.reads.length) expect(acls).toContain(acl('GROUP', `prod.${p.name}`, 'READ'));
      expect(acls).toContain(acl('TRANSACTIONAL_ID', `prod.${p.name}.`, 'WRITE', 'PREFIXED'));
    }
    for (const t of directTopicAccess(all).writes) expect(acls).toContain(acl('TOPIC', `prod.${t}`, 'WRITE'));
    expect(acls).toContain(acl('CLUSTER', 'kafka-cluster', 'IDEMPOTENT_WRITE'));
    // Nothing of another app, no wildcard, no CREATE beyond the changelogs without --migrate.
    expect(acls.every((a) => a.includes(' prod.') || a.startsWith('CLUSTER'))).toBe(true);
    expect(acls.filter((a) => a.endsWith(' CREATE')).every((a) => a.includes('-changelog '))).toBe(true);
  });

  it('exactly what dedup-bands needs, nothing more', () => {
    const describeAll = topology.topics.flatMap((t) => [
      acl('TOPIC', `prod.${t.name}`, 'DESCRIBE'),
      acl('TOPIC', `prod.${t.name}`, 'DESCRIBE_CONFIGS'),
    ]);
    const processors = ['dedup-bands'];
    expect(
      new Set(flat(aclsFor(topology, names, PRINCIPAL, { processors, ...directTopicAccess(processors) }))),
    ).toEqual(
      new Set([
        acl('TOPIC', 'prod.qa.bands', 'READ'),
        acl('TOPIC', 'prod.qa.band-verdicts', 'WRITE'),
        acl('TOPIC', 'prod.dlq', 'WRITE'),
        acl('TOPIC', 'prod.dedup-bands-bands-changelog', 'READ'),
        acl('TOPIC', 'prod.dedup-bands-bands-changelog', 'WRITE'),
        acl('TOPIC', 'prod.dedup-bands-bands-changelog', 'CREATE'),
        acl('TOPIC', 'prod.dedup-bands-bands-changelog', 'DESCRIBE_CONFIGS'),
        ...describeAll,
        acl('GROUP', 'prod.dedup-bands', 'READ'),
        acl('GROUP', 'prod.reader.', 'READ', 'PREFIXED'),
        acl('TRANSACTIONAL_ID', 'prod.dedup-bands.', 'WRITE', 'PREFIXED'),
        acl('TRANSACTIONAL_ID', 'prod.dedup-bands.', 'DESCRIBE', 'PREFIXED'),
        acl('CLUSTER', 'kafka-cluster', 'IDEMPOTENT_WRITE'),
      ]),
    );
  });

  it('an LLM stage reads and appends the journal and endpoint facts, and appends its calls', () => {
    const acls = flat(
      aclsFor(topology, names, PRINCIPAL, { processors: ['extract'], ...directTopicAccess(['extract']) }),
    );
    for (const t of ['llm.journal', 'llm.endpoints'])
      expect(acls).toContain(acl('TOPIC', `prod.${t}`, 'READ'));
    for (const t of ['llm.journal', 'llm.endpoints', 'llm.calls'])
      expect(acls).toContain(acl('TOPIC', `prod.${t}`, 'WRITE'));
  });

  it('--migrate adds CREATE and ALTER_CONFIGS on the app prefix', () => {
    const acls = flat(aclsFor(topology, names, PRINCIPAL, { processors: [], creates: true }));
    expect(acls).toContain(acl('TOPIC', 'prod.', 'CREATE', 'PREFIXED'));
    expect(acls).toContain(acl('TOPIC', 'prod.', 'ALTER_CONFIGS', 'PREFIXED'));
  });

  it('prints kafka-acls.sh lines', () => {
    const lines = kafkaAclsCommands(
      aclsFor(topology, names, PRINCIPAL, { processors: ['sampler'] }),
      'b1:9093',
    );
    expect(lines).toContain(
      'kafka-acls.sh --bootstrap-server b1:9093 --command-config admin.properties --add --allow-principal User:pipeline --operation Write --transactional-id prod.sampler. --resource-pattern-type prefixed',
    );
    expect(lines).toContain(
      'kafka-acls.sh --bootstrap-server b1:9093 --command-config admin.properties --add --allow-principal User:pipeline --operation IdempotentWrite --cluster',
    );
    expect(lines).toContain(
      'kafka-acls.sh --bootstrap-server b1:9093 --command-config admin.properties --add --allow-principal User:pipeline --operation Read --group prod.sampler',
    );
  });

  it('refuses an unknown processor and a principal without a type', () => {
    expect(() => aclsFor(topology, names, PRINCIPAL, { processors: ['nope'] })).toThrow(
      /unknown processor "nope"/,
    );
    expect(() => aclsFor(topology, names, 'pipeline', { processors: [] })).toThrow(/expected TYPE:NAME/);
  });
});
