import kafkajs from 'kafkajs';
import rdkafka from 'node-rdkafka';
import { type AccessFault, accessFault, explainAccess } from './access-errors.js';
import type { KafkaAcl } from './acls.js';
import type { KafkaEndpoint } from './endpoint.js';

const { Kafka, logLevel } = kafkajs;

/** How long a check waits for the brokers before it calls them unreachable. */
const CHECK_TIMEOUT_MS = 15_000;

/** The cluster as one client saw it. */
export interface ClusterSeen {
  /** kafkajs asks for it; librdkafka's metadata does not carry it. */
  readonly clusterId: string | null;
  readonly brokers: readonly string[];
  readonly controller: number | null;
}

/** One check of one resource the role needs, passed or not. */
export interface AccessCheck {
  readonly resource: string;
  readonly fault: AccessFault | null;
}

/**
 * Connects with kafkajs, no retries, and describes the cluster: a wrong password, an unknown CA,
 * a hostname mismatch or a mechanism the broker lacks fails here, at once, as a KafkaAccessError.
 * `run` does this before its first real connection, so a start that cannot work stops in seconds,
 * before anything is read or committed.
 */
export async function probeKafkajs(endpoint: KafkaEndpoint): Promise<ClusterSeen> {
  const admin = new Kafka({
    clientId: 'bioalchemy-check',
    ...endpoint.kafkajs(),
    logLevel: logLevel.NOTHING,
    connectionTimeout: CHECK_TIMEOUT_MS,
    authenticationTimeout: CHECK_TIMEOUT_MS,
    retry: { retries: 0 },
  }).admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return {
      clusterId: cluster.clusterId,
      brokers: cluster.brokers.map((b) => `${b.host}:${b.port}`),
      controller: cluster.controller,
    };
  } catch (e) {
    throw explainAccess(e);
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

/**
 * Connects with librdkafka and asks for the cluster's metadata. librdkafka reports a refused
 * handshake as an error event (its connect only times out), so the first such event is the answer.
 */
export async function probeRdkafka(endpoint: KafkaEndpoint): Promise<ClusterSeen> {
  let properties: ReturnType<KafkaEndpoint['rdkafka']>;
  try {
    properties = endpoint.rdkafka();
  } catch (e) {
    throw explainAccess(e);
  }
  const producer = new rdkafka.Producer({ ...properties, 'client.id': 'bioalchemy-check' });
  const refused = new Promise<never>((_, reject) =>
    producer.on('event.error', (err: rdkafka.LibrdKafkaError) => {
      if (accessFault(err)) reject(explainAccess(err));
    }),
  );
  refused.catch(() => {});
  try {
    const metadata = await Promise.race([
      refused,
      new Promise<rdkafka.Metadata>((resolve, reject) =>
        producer.connect({ timeout: CHECK_TIMEOUT_MS }, (err, data) => (err ? reject(err) : resolve(data))),
      ),
    ]);
    return {
      clusterId: null,
      brokers: metadata.brokers.map((b) => `${b.host}:${b.port}`),
      controller: null,
    };
  } catch (e) {
    throw explainAccess(e);
  } finally {
    await new Promise<void>((resolve) => producer.disconnect(() => resolve()));
  }
}

/**
 * How long a group's coordinator may take to settle. On a fresh cluster the first group request
 * creates the offsets topic and its coordinator loads it: until then the broker answers
 * NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS, which kafkajs' admin passes on to OffsetFetch's
 * caller rather than retrying (seen here: a check on a newly formatted broker failed with "This is
 * not the correct coordinator for this group").
 */
const COORDINATOR_SETTLE_MS = 30_000;

/**
 * The error, or one it wraps (kafkajs' retrier keeps it as originalError, its non-retriable
 * errors as cause), says the coordinator is moving: by its protocol error type or kafkajs' words.
 */
function coordinatorMoving(e: unknown): boolean {
  for (let error = e as Record<string, unknown> | null | undefined, depth = 0; error && depth < 5; depth++) {
    if (
      ['NOT_COORDINATOR', 'COORDINATOR_NOT_AVAILABLE', 'COORDINATOR_LOAD_IN_PROGRESS'].includes(
        String(error.type),
      ) ||
      /not the correct coordinator|coordinator is not available|coordinator is loading/i.test(
        String(error.message),
      )
    )
      return true;
    error = (error.originalError ?? error.cause) as Record<string, unknown> | undefined;
  }
  return false;
}

/**
 * Checks, with actions that change nothing, that the principal may use what the role's ACLs name:
 * each topic's metadata (DESCRIBE), each consumer group's committed offsets (READ), each transactional-id prefix by initialising a producer under it (WRITE; it
 * writes no record). An existing topic the principal may not describe is TOPIC_AUTHORIZATION_FAILED.
 */
export async function checkAccess(
  endpoint: KafkaEndpoint,
  acls: readonly KafkaAcl[],
): Promise<AccessCheck[]> {
  // kafkajs drops the broker's refusal to find a group's or a transactional id's coordinator
  // (GROUP_AUTHORIZATION_FAILED becomes "Failed to find group coordinator") and only logs it, at
  // debug: kept from the log.
  let coordinatorRefusal: unknown = null;
  const kafka = new Kafka({
    clientId: 'bioalchemy-check',
    ...endpoint.kafkajs(),
    logLevel: logLevel.DEBUG,
    logCreator:
      () =>
      ({ log }) => {
        if (log.message === 'Tried to find group coordinator' && accessFault(log.error))
          coordinatorRefusal = log.error;
      },
    // A few retries: with none, kafkajs neither looks up a group's coordinator nor makes an
    // idempotent producer, and a fresh cluster's coordinators take a moment to load.
    retry: { retries: 5 },
  });
  const admin = kafka.admin();
  await admin.connect().catch((e: unknown) => {
    throw explainAccess(e);
  });
  const out: AccessCheck[] = [];
  const check = async (resource: string, action: () => Promise<unknown>) => {
    const deadline = Date.now() + COORDINATOR_SETTLE_MS;
    for (;;) {
      coordinatorRefusal = null;
      try {
        await action();
        out.push({ resource, fault: null });
        return;
      } catch (e) {
        if (coordinatorMoving(e) && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 250));
          continue;
        }
        const fault = accessFault(coordinatorRefusal ?? e);
        if (!fault) throw e;
        out.push({ resource, fault });
        return;
      }
    }
  };
  try {
    const existing = new Set(await admin.listTopics());
    const topics = unique(acls.filter((a) => a.resourceType === 'TOPIC' && a.patternType === 'LITERAL'));
    for (const topic of topics) {
      // A topic not there yet (migrate makes it) has nothing to check but its creation.
      if (!existing.has(topic)) continue;
      await check(`topic ${topic}`, () => admin.fetchTopicMetadata({ topics: [topic] }));
    }
    for (const acl of acls.filter((a) => a.resourceType === 'GROUP')) {
      const group = acl.patternType === 'PREFIXED' ? `${acl.name}check` : acl.name;
      await check(`group ${group}`, () => admin.fetchOffsets({ groupId: group }));
    }
    for (const prefix of unique(acls.filter((a) => a.resourceType === 'TRANSACTIONAL_ID')))
      await check(`transactional id ${prefix}*`, async () => {
        const producer = kafka.producer({ transactionalId: `${prefix}check`, maxInFlightRequests: 1 });
        try {
          await producer.connect();
          // Finding the coordinator and initialising the id asks the broker for WRITE on it.
          const txn = await producer.transaction();
          await txn.abort();
        } finally {
          await producer.disconnect();
        }
      });
  } finally {
    await admin.disconnect();
  }
  return out;
}

function unique(acls: readonly KafkaAcl[]): string[] {
  return [...new Set(acls.map((a) => a.name))];
}
