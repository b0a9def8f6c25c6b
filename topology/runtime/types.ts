import type { LogRecord, Offset, OutgoingRecord, StateChange } from '../records.js';
import type { TopicSpec } from '../topology.js';

/**
 * Where the log lives. The embedded SQLite log, Kafka and the in-memory test log implement this;
 * processors never see it.
 */
export interface Runtime {
  readonly name: string;
  /** Creates missing topics; an existing topic with other settings is an error. */
  ensureTopics(topics: readonly TopicSpec[]): Promise<void>;
  /** Appends records atomically (all or none); values are JSON text already validated. */
  append(records: readonly OutgoingRecord[]): Promise<void>;
  /** Reads committed records of one partition from an offset (for `consume` and tests). */
  read(topic: string, partition: number, fromOffset: number, max: number): Promise<LogRecord[]>;
  /** Next offset to be written, per partition. */
  endOffsets(topic: string): Promise<number[]>;
  /** A consumer group's committed next offsets, keyed by partitionKey(topic, partition); absent where none. */
  committedOffsets(group: string, topics: readonly string[]): Promise<Map<string, number>>;
  /**
   * Applies compaction (latest value per key) and retention, where the runtime does not do it by
   * itself as Kafka does. Returns the records removed.
   */
  maintain?(now?: number): Promise<number>;
  /** Joins consumer group `group` for `topics`; the task owns its stores (of the partitions it is given). */
  openTask(spec: TaskSpec): Promise<LogTask>;
  /**
   * Every key of a group's store as committed, with its scope (an input partition, or GLOBAL),
   * without joining the group: for `status`, tests and benchmarks.
   */
  readStore(group: string, store: string): Promise<StoredValue[]>;
  close(): Promise<void>;
}

export interface TaskSpec {
  readonly group: string;
  readonly topics: readonly string[];
  readonly stores: readonly string[];
  /**
   * 'partition' (the default): the stores are per input partition, and a member holds those of
   * the partitions it is assigned. 'global': one store, and one member of the group at a time
   * takes every input partition.
   */
  readonly scope?: 'partition' | 'global';
}

export interface StoredValue {
  readonly partition: number;
  readonly key: string;
  readonly value: string;
}

/** One member of a consumer group, with the state stores of its processor. */
export interface LogTask {
  /** Next records after what this task has already polled; waits up to waitMs when there are none. */
  poll(max: number, waitMs: number): Promise<LogRecord[]>;
  /** Committed value of a store key in a scope (an owned input partition, or GLOBAL); the step layers its own writes on top. */
  readState(store: string, key: string, partition: number): string | undefined;
  /** The input partitions (numbers) this member owns now and holds the state of. */
  owned(): readonly number[];
  /**
   * Whether the group has given this member its assignment (possibly empty) and no rebalance is
   * being taken in: a worker's readiness (/readyz). Absent: always (the embedded log has no group).
   */
  inGroup?(): boolean;
  /** Starts a transaction of one or more steps; see topology/checkpoint.ts for the order of its calls. */
  begin(): Promise<LogTransaction>;
  /** Makes committed state changes visible to readState (no-op where the transaction already did). */
  flushState(changes: readonly StateChange[]): Promise<void>;
  /**
   * Forgets polled-but-uncommitted records so the next poll starts from the committed offsets.
   * After a failed commit, whose outcome is unknown, it re-reads offsets and state from the log.
   */
  rewind(): Promise<void>;
  close(): Promise<void>;
}

/**
 * One transaction of the log, taking one or more steps: writeChangelogs and produce are called
 * once a step, commitOffsets once before commit. Nothing is visible to others until commit() resolves.
 */
export interface LogTransaction {
  writeChangelogs(changes: readonly StateChange[]): Promise<void>;
  produce(records: readonly OutgoingRecord[]): Promise<void>;
  /** Next offset to read per partition, keyed by partitionKey(topic, partition). */
  commitOffsets(offsets: ReadonlyMap<string, Offset>): Promise<void>;
  commit(): Promise<void>;
  abort(): Promise<void>;
}

/** Another member took over the task's partitions: its step must not commit. */
export class FencedError extends Error {}
