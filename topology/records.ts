/** A record as it sits in a log: what every runtime hands to a task. */
export interface LogRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly key: string | null;
  /** The JSON text of the value, exactly as produced. */
  readonly value: string;
  readonly timestamp: number;
  /** The writer's stamp: the schema fingerprint the engine validated the value against; absent from other writers. */
  readonly validatedAs?: string;
  /**
   * Why the runtime could not take the value off the wire (Kafka with a Schema Registry: a cut
   * frame, an unknown schema id); `value` is then the raw bytes as UTF-8. A task dead-letters it.
   */
  readonly unreadable?: string;
}

/** A record to append; the runtime picks the partition from the key unless one is given. */
export interface OutgoingRecord {
  readonly topic: string;
  readonly key: string | null;
  readonly value: string;
  readonly partition?: number;
  /** See LogRecord.validatedAs: set when the engine validated the value for this topic. */
  readonly validatedAs?: string;
  /**
   * The input partition whose step made it (its scope, see StateChange.partition): on Kafka with
   * kafkajs it travels in that partition's transaction. Absent for appends from outside a step.
   */
  readonly from?: number;
}

/**
 * The scope of a global store (a processor with scope 'global', or one that reads no topic): one
 * store over all partitions, a changelog of one partition.
 */
export const GLOBAL = -1;

/**
 * A change to one key of a state store; null deletes the key. `partition` is the store's scope: the
 * input partition (number) whose step wrote it, as a Kafka Streams task's store is its partition's,
 * or GLOBAL. Its changelog record goes to that partition of the store's changelog.
 */
export interface StateChange {
  readonly store: string;
  readonly key: string;
  readonly value: string | null;
  readonly partition: number;
}

/** A partition's next offset to read: what a consumer group commits. */
export type Offset = { topic: string; partition: number; offset: number };

export const partitionKey = (topic: string, partition: number) => `${topic}\u0000${partition}`;

/** One key of one state store in one scope (a partition, or GLOBAL), as a map key. */
export const stateKey = (store: string, key: string, partition: number) =>
  `${partition}\u0000${store}\u0000${key}`;

/**
 * Kafka's default partitioner (murmur2 of the key bytes, positive, modulo partitions), so a key
 * lands in the same partition on the embedded log and on Kafka.
 */
export function partitionForKey(key: string, partitions: number): number {
  return (murmur2(Buffer.from(key, 'utf8')) & 0x7fffffff) % partitions;
}

function murmur2(data: Buffer): number {
  const m = 0x5bd1e995;
  const length = data.length;
  let h = 0x9747b28c ^ length;
  const words = length >> 2;
  for (let i = 0; i < words; i++) {
    let k = data.readInt32LE(i * 4);
    k = Math.imul(k, m);
    k ^= k >>> 24;
    k = Math.imul(k, m);
    h = Math.imul(h, m) ^ k;
  }
  const tail = words * 4;
  switch (length & 3) {
    // biome-ignore lint/suspicious/noFallthroughSwitchClause: murmur2 mixes the tail bytes by falling through
    case 3:
      h ^= (data[tail + 2]! & 0xff) << 16;
    // biome-ignore lint/suspicious/noFallthroughSwitchClause: see above
    case 2:
      h ^= (data[tail + 1]! & 0xff) << 8;
    case 1:
      h ^= data[tail]! & 0xff;
      h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h;
}

/** On a compacted topic, a record whose value is JSON null deletes its key (Kafka's tombstone, as JSON text). */
export const TOMBSTONE = 'null';
