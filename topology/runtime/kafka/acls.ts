import type { Topology } from '../../topology.js';
import type { KafkaNames } from './names.js';

export type AclResource = 'TOPIC' | 'GROUP' | 'TRANSACTIONAL_ID' | 'CLUSTER';
export type AclOperation =
  | 'READ'
  | 'WRITE'
  | 'CREATE'
  | 'DESCRIBE'
  | 'DESCRIBE_CONFIGS'
  | 'ALTER_CONFIGS'
  | 'IDEMPOTENT_WRITE';

/** One ALLOW binding, as Kafka's authorizer stores it (the host is always `*`). */
export interface KafkaAcl {
  readonly principal: string;
  readonly resourceType: AclResource;
  readonly patternType: 'LITERAL' | 'PREFIXED';
  /** The resource's name on Kafka (prefixed with the app), `kafka-cluster` for the cluster. */
  readonly name: string;
  readonly operation: AclOperation;
}

/** What one role (the processes of one `run --processors …`) does on the cluster. */
export interface RoleAccess {
  /** The processors it runs: each one's task reads, writes and holds what the topology says. */
  readonly processors: readonly string[];
  /** Engine topics read outside the tasks, without a group (a response journal read at start). */
  readonly reads?: readonly string[];
  /** Engine topics appended to outside the tasks (idempotent, not transactional). */
  readonly writes?: readonly string[];
  /** It creates the topology's topics and brings their configs up to date (`migrate`). */
  readonly creates?: boolean;
}

/**
 * The ACLs a role needs, computed from the topology, in a stable order. Each processor's task:
 * READ on its inputs and its consumer group; WRITE on its outputs and the dead-letter topic; READ
 * and WRITE on its stores' changelogs (restored at start, written in its transactions), which it
 * creates if missing (CREATE on those names); WRITE and DESCRIBE on its transactional-id prefix.
 * Every process: READ on its readers' group prefix (see KafkaNames.readerGroup), IDEMPOTENT_WRITE
 * on the cluster (its producers are idempotent), and DESCRIBE and
 * DESCRIBE_CONFIGS on every topic of the topology (a start checks each one's partitions and
 * cleanup policy). READ and WRITE imply DESCRIBE, so it is not repeated for them.
 */
export function aclsFor(
  topology: Topology,
  names: KafkaNames,
  principal: string,
  role: RoleAccess,
): KafkaAcl[] {
  if (!/^[A-Za-z]+:.+$/.test(principal))
    throw new Error(`principal "${principal}": expected TYPE:NAME, e.g. User:bioalchemy`);
  const known = topology.processors.map((p) => p.name);
  const unknown = role.processors.filter((n) => !known.includes(n));
  if (unknown.length) throw new Error(`unknown processor "${unknown[0]}" (one of: ${known.join(', ')})`);
  const out = new Map<string, KafkaAcl>();
  const add = (resourceType: AclResource, name: string, operation: AclOperation, prefixed = false) => {
    const acl: KafkaAcl = {
      principal,
      resourceType,
      patternType: prefixed ? 'PREFIXED' : 'LITERAL',
      name,
      operation,
    };
    out.set(`${resourceType}\u0000${acl.patternType}\u0000${name}\u0000${operation}`, acl);
  };
  const topic = (name: string, operation: AclOperation) => add('TOPIC', names.topic(name), operation);
  for (const p of topology.processors.filter((x) => role.processors.includes(x.name))) {
    for (const t of p.reads) topic(t, 'READ');
    for (const t of [...p.writes, topology.deadLetterTopic]) topic(t, 'WRITE');
    for (const store of p.stores) {
      const changelog = `${p.name}-${store}-changelog`;
      for (const op of ['READ', 'WRITE', 'CREATE', 'DESCRIBE_CONFIGS'] as const) topic(changelog, op);
    }
    if (p.reads.length) add('GROUP', names.group(p.name), 'READ');
    add('TRANSACTIONAL_ID', names.transactionalId(p.name, ''), 'WRITE', true);
    add('TRANSACTIONAL_ID', names.transactionalId(p.name, ''), 'DESCRIBE', true);
  }
  for (const t of role.reads ?? []) topic(t, 'READ');
  for (const t of role.writes ?? []) topic(t, 'WRITE');
  for (const t of topology.topics) {
    topic(t.name, 'DESCRIBE');
    topic(t.name, 'DESCRIBE_CONFIGS');
  }
  if (role.creates)
    for (const op of ['CREATE', 'ALTER_CONFIGS', 'DESCRIBE_CONFIGS'] as const)
      add('TOPIC', names.prefix, op, true);
  add('GROUP', names.readerGroupPrefix, 'READ', true);
  add('CLUSTER', 'kafka-cluster', 'IDEMPOTENT_WRITE');
  return [...out.values()].sort(byResource);
}

const RESOURCE_ORDER: AclResource[] = ['TOPIC', 'GROUP', 'TRANSACTIONAL_ID', 'CLUSTER'];

function byResource(a: KafkaAcl, b: KafkaAcl): number {
  return (
    RESOURCE_ORDER.indexOf(a.resourceType) - RESOURCE_ORDER.indexOf(b.resourceType) ||
    a.name.localeCompare(b.name) ||
    a.patternType.localeCompare(b.patternType) ||
    a.operation.localeCompare(b.operation)
  );
}

/** kafka-acls.sh's operation names: Read, IdempotentWrite, DescribeConfigs. */
function operationName(op: AclOperation): string {
  return op
    .toLowerCase()
    .split('_')
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('');
}

const RESOURCE_FLAG: Record<AclResource, string> = {
  TOPIC: '--topic',
  GROUP: '--group',
  TRANSACTIONAL_ID: '--transactional-id',
  CLUSTER: '--cluster',
};

/** One `kafka-acls.sh --add` line per binding, to paste into a shell with an admin's client config. */
export function kafkaAclsCommands(acls: readonly KafkaAcl[], bootstrapServer: string): string[] {
  return acls.map((a) =>
    [
      'kafka-acls.sh',
      `--bootstrap-server ${bootstrapServer}`,
      '--command-config admin.properties',
      '--add',
      `--allow-principal ${shellQuote(a.principal)}`,
      `--operation ${operationName(a.operation)}`,
      a.resourceType === 'CLUSTER' ? '--cluster' : `${RESOURCE_FLAG[a.resourceType]} ${shellQuote(a.name)}`,
      ...(a.patternType === 'PREFIXED' ? ['--resource-pattern-type prefixed'] : []),
    ].join(' '),
  );
}

function shellQuote(s: string): string {
  return /^[A-Za-z0-9_.:@=,/-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
