import type { Logger } from 'pino';
import { deadLetterForRecord, type TopicCodecs } from './codec.js';
import type { InputRecord, StateStore, StepContext } from './processor.js';
import { type LogRecord, type OutgoingRecord, type StateChange, stateKey } from './records.js';
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

/** One step's buffered effects, seen by the processor through StepContext. */
export class Step implements StepContext {
  readonly outputs: OutgoingRecord[] = [];
  readonly changes = new Map<string, StateChange>();
  readonly sinkWrites: (() => Promise<void>)[] = [];
  deadLettered = 0;

  constructor(
    readonly processor: string,
    readonly log: Logger,
    /** A store key's value before this step: committed, or written by an earlier step not yet committed. */
    private readonly readBefore: (id: string, store: string, key: string) => string | null | undefined,
    private readonly codecs: TopicCodecs,
    private readonly topology: Topology,
    private readonly allowed: { writes: ReadonlySet<string>; stores: ReadonlySet<string> },
    readonly now: () => number,
  ) {}

  emit(topic: string, key: string | null, value: unknown): void {
    if (!this.allowed.writes.has(topic)) {
      throw new Error(`processor "${this.processor}" does not declare topic "${topic}" in writes`);
    }
    this.push(topic, key, value);
  }

  forward(input: InputRecord, topic: string, key: string | null = input.key): void {
    const stamp = this.codecs.stampOf(topic);
    if (
      !(input instanceof TrustedInput) ||
      input.record.validatedAs !== stamp ||
      !this.allowed.writes.has(topic)
    ) {
      this.emit(topic, key, input.value);
      return;
    }
    this.outputs.push({ topic, key, value: input.record.value, validatedAs: stamp });
  }

  /** Validates and stamps an output. */
  private push(topic: string, key: string | null, value: unknown): void {
    this.outputs.push({
      topic,
      key,
      value: this.codecs.encode(topic, value),
      validatedAs: this.codecs.stampOf(topic),
    });
  }

  deadLetter(input: InputRecord | null, reason: string, payload?: string): void {
    const record: LogRecord =
      input instanceof TrustedInput
        ? input.record
        : input
          ? { ...input, value: JSON.stringify(input.value) }
          : { topic: '(timer)', partition: -1, offset: -1, key: null, value: 'null', timestamp: this.now() };
    this.deadLetterRaw(record, reason, payload);
  }

  deadLetterRaw(record: LogRecord, reason: string, payload?: string): void {
    const dl = deadLetterForRecord(record, reason, this.processor, payload);
    this.push(this.topology.deadLetterTopic, dl.id, dl);
    this.deadLettered++;
  }

  sink(write: () => Promise<void>): void {
    this.sinkWrites.push(write);
  }

  store(name: string): StateStore {
    if (!this.allowed.stores.has(name))
      throw new Error(`processor "${this.processor}" does not declare store "${name}"`);
    return {
      get: <T>(key: string): T | undefined => {
        const id = stateKey(name, key);
        const own = this.changes.get(id);
        const text = own ? own.value : this.readBefore(id, name, key);
        return text == null ? undefined : (JSON.parse(text) as T);
      },
      put: (key, value) =>
        this.changes.set(stateKey(name, key), { store: name, key, value: JSON.stringify(value) }),
      delete: (key) => this.changes.set(stateKey(name, key), { store: name, key, value: null }),
    };
  }
}
