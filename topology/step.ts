import type { Logger } from 'pino';
import { type DeadLetter, type DeadLetterCode, deadLetterCodeOf } from '../schemas/dead-letter.js';
import { deadLetterForRecord, type TopicCodecs } from './codec.js';
import type { InputRecord, StateStore, StepContext } from './processor.js';
import { GLOBAL, type LogRecord, type OutgoingRecord, type StateChange, stateKey } from './records.js';
import type { Topology } from './topology.js';

const UNPARSED = Symbol('unparsed');

/**
 * An input whose writer validated it against this topic's schema: nothing to check, and the
 * value is parsed only if the processor reads it. forward() reuses its bytes.
 */
export class TrustedInput implements InputRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly key: string | null;
  readonly timestamp: number;
  private parsed: unknown = UNPARSED;

  constructor(readonly record: LogRecord) {
    this.topic = record.topic;
    this.partition = record.partition;
    this.offset = record.offset;
    this.key = record.key;
    this.timestamp = record.timestamp;
  }

  get value(): unknown {
    if (this.parsed === UNPARSED) this.parsed = JSON.parse(this.record.value);
    return this.parsed;
  }

  /** Serialised, an input is the plain record it stands for. */
  toJSON(): InputRecord {
    const { topic, partition, offset, key, timestamp, value } = this;
    return { topic, partition, offset, key, timestamp, value };
  }
}

/**
 * One step's buffered effects, seen by the processor through StepContext. The step has a scope:
 * GLOBAL, or with scoped() one input partition whose store it reads and writes and whose
 * transaction its outputs join (Kafka Streams' task). A batch of several partitions is handed to
 * the processor one partition at a time, each through its scoped view of the same step.
 */
export class Step implements StepContext {
  readonly outputs: OutgoingRecord[] = [];
  readonly changes = new Map<string, StateChange>();
  readonly sinkWrites: (() => Promise<void>)[] = [];
  /** What runs once this step's transaction has committed (onCommit). */
  readonly onCommitted: (() => void)[] = [];
  /** Dead letters of this step by code, for the metric. */
  readonly deadLettered = new Map<DeadLetterCode, number>();

  constructor(
    readonly processor: string,
    readonly log: Logger,
    /** A store key's value before this step: committed, or written by an earlier step not yet committed. */
    private readonly readBefore: (
      id: string,
      store: string,
      key: string,
      partition: number,
    ) => string | null | undefined,
    private readonly codecs: TopicCodecs,
    private readonly topology: Topology,
    private readonly allowed: { writes: ReadonlySet<string>; stores: ReadonlySet<string> },
    readonly now: () => number,
    /** The scope of this view: GLOBAL, or an input partition (a timer's step in one partition). */
    readonly scope: number = GLOBAL,
    /** The processor's state and outputs are per input partition (its scope is 'partition'). */
    private readonly partitioned = false,
  ) {}

  /** This step as seen from one input partition: its store is that partition's, its outputs go with it. */
  scoped(partition: number): StepContext {
    return new ScopedStep(this, partition);
  }

  emit(topic: string, key: string | null, value: unknown): void {
    this.emitIn(this.scope, topic, key, value);
  }

  emitIn(scope: number, topic: string, key: string | null, value: unknown): void {
    if (!this.allowed.writes.has(topic)) {
      throw new Error(`processor "${this.processor}" does not declare topic "${topic}" in writes`);
    }
    this.push(scope, topic, key, value);
    // A dead letter made whole by the processor (ingest's readers make their own) counts like one
    // made by deadLetter(); validated by now, so it has a reason, and a code unless of the old layout.
    if (topic === this.topology.deadLetterTopic) {
      const dl = value as Pick<DeadLetter, 'reason'> & Partial<DeadLetter>;
      this.countDeadLetter(dl.code ?? deadLetterCodeOf(dl.reason));
    }
  }

  forward(input: InputRecord, topic: string, key: string | null = input.key): void {
    this.forwardIn(this.scope, input, topic, key);
  }

  forwardIn(scope: number, input: InputRecord, topic: string, key: string | null = input.key): void {
    const stamp = this.codecs.stampOf(topic);
    if (
      !(input instanceof TrustedInput) ||
      input.record.validatedAs !== stamp ||
      !this.allowed.writes.has(topic)
    ) {
      this.emitIn(scope, topic, key, input.value);
      return;
    }
    this.outputs.push(
      scope === GLOBAL
        ? { topic, key, value: input.record.value, validatedAs: stamp }
        : { topic, key, value: input.record.value, validatedAs: stamp, from: scope },
    );
  }

  /** Validates and stamps an output. */
  private push(scope: number, topic: string, key: string | null, value: unknown): void {
    const encoded = this.codecs.encode(topic, value);
    const validatedAs = this.codecs.stampOf(topic);
    this.outputs.push(
      scope === GLOBAL
        ? { topic, key, value: encoded, validatedAs }
        : { topic, key, value: encoded, validatedAs, from: scope },
    );
  }

  deadLetter(input: InputRecord | null, code: DeadLetterCode, reason: string, payload?: string): void {
    this.deadLetterIn(this.scope, input, code, reason, payload);
  }

  deadLetterIn(
    scope: number,
    input: InputRecord | null,
    code: DeadLetterCode,
    reason: string,
    payload?: string,
  ): void {
    const record: LogRecord =
      input instanceof TrustedInput
        ? input.record
        : input
          ? { ...input, value: JSON.stringify(input.value) }
          : { topic: '(timer)', partition: -1, offset: -1, key: null, value: 'null', timestamp: this.now() };
    this.deadLetterRawIn(scope, record, code, reason, payload);
  }

  /** Dead-letters a record as it came from the log, in the scope of its own partition unless the step is global. */
  deadLetterRaw(record: LogRecord, code: DeadLetterCode, reason: string, payload?: string): void {
    this.deadLetterRawIn(this.partitioned ? record.partition : GLOBAL, record, code, reason, payload);
  }

  private deadLetterRawIn(
    scope: number,
    record: LogRecord,
    code: DeadLetterCode,
    reason: string,
    payload?: string,
  ): void {
    const dl = deadLetterForRecord(record, code, reason, this.processor, payload);
    this.push(scope, this.topology.deadLetterTopic, dl.id, dl);
    this.countDeadLetter(code);
  }

  private countDeadLetter(code: DeadLetterCode): void {
    this.deadLettered.set(code, (this.deadLettered.get(code) ?? 0) + 1);
  }

  sink(write: () => Promise<void>): void {
    this.sinkWrites.push(write);
  }

  onCommit(fn: () => void): void {
    this.onCommitted.push(fn);
  }

  store(name: string): StateStore {
    return this.storeIn(this.scope, name);
  }

  storeIn(partition: number, name: string): StateStore {
    if (!this.allowed.stores.has(name))
      throw new Error(`processor "${this.processor}" does not declare store "${name}"`);
    return {
      get: <T>(key: string): T | undefined => {
        const id = stateKey(name, key, partition);
        const own = this.changes.get(id);
        const text = own ? own.value : this.readBefore(id, name, key, partition);
        return text == null ? undefined : (JSON.parse(text) as T);
      },
      put: (key, value) =>
        this.changes.set(stateKey(name, key, partition), {
          store: name,
          key,
          value: JSON.stringify(value),
          partition,
        }),
      delete: (key) =>
        this.changes.set(stateKey(name, key, partition), { store: name, key, value: null, partition }),
    };
  }
}

/** A step seen from one input partition (see Step.scoped). */
class ScopedStep implements StepContext {
  constructor(
    private readonly step: Step,
    private readonly partition: number,
  ) {}

  get processor(): string {
    return this.step.processor;
  }

  get log(): Logger {
    return this.step.log;
  }

  now(): number {
    return this.step.now();
  }

  emit(topic: string, key: string | null, value: unknown): void {
    this.step.emitIn(this.partition, topic, key, value);
  }

  forward(input: InputRecord, topic: string, key?: string | null): void {
    this.step.forwardIn(this.partition, input, topic, key === undefined ? input.key : key);
  }

  deadLetter(input: InputRecord | null, code: DeadLetterCode, reason: string, payload?: string): void {
    this.step.deadLetterIn(this.partition, input, code, reason, payload);
  }

  store(name: string): StateStore {
    return this.step.storeIn(this.partition, name);
  }

  sink(write: () => Promise<void>): void {
    this.step.sink(write);
  }

  onCommit(fn: () => void): void {
    this.step.onCommit(fn);
  }
}
