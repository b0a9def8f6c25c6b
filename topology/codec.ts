import type { z } from 'zod';
import {
  contentHash,
  type DeadLetter,
  type DeadLetterCode,
  formatIssues,
  jsonSchemaOf,
  RECORD_SCHEMAS,
  truncatePayload,
} from '../schemas/index.js';
import type { LogRecord } from './records.js';
import type { Topology } from './topology.js';

/** A value that does not match its topic's schema; the message names the failing fields. */
export class RecordValidationError extends Error {}

/**
 * Validates and (de)serialises values by the schema each topic declares. A value this validated
 * travels with its topic's stamp (a fingerprint of the schema), so a reader with the same schema
 * need not validate it again: the way a Confluent schema id says which schema wrote a record.
 */
export class TopicCodecs {
  private readonly schemas = new Map<string, z.ZodType | null>();
  private readonly stamps = new Map<string, string>();

  constructor(topology: Pick<Topology, 'topics'>) {
    for (const t of topology.topics) {
      const schema = t.schema ? RECORD_SCHEMAS[t.schema] : null;
      this.schemas.set(t.name, schema);
      // Schema-less topics still promise well-formed JSON.
      this.stamps.set(
        t.name,
        schema ? contentHash('schema', t.schema, JSON.stringify(jsonSchemaOf(schema))) : 'json',
      );
    }
  }

  /** The stamp of values validated for `topic`. */
  stampOf(topic: string): string {
    const stamp = this.stamps.get(topic);
    if (stamp === undefined) throw new RecordValidationError(`unknown topic "${topic}"`);
    return stamp;
  }

  /** Whether the record's writer validated its value against this topic's schema as it is now. */
  trusts(record: LogRecord): boolean {
    return (
      record.unreadable === undefined &&
      record.validatedAs !== undefined &&
      record.validatedAs === this.stamps.get(record.topic)
    );
  }

  /** A record's value, validated; a value the runtime could not read off the wire fails with why. */
  decodeRecord(record: LogRecord): unknown {
    if (record.unreadable !== undefined) throw new RecordValidationError(record.unreadable);
    return this.decode(record.topic, record.value);
  }

  /** Validated value (with schema defaults applied) as JSON text. */
  encode(topic: string, value: unknown): string {
    return JSON.stringify(this.check(topic, value));
  }

  decode(topic: string, text: string): unknown {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      throw new RecordValidationError(`not JSON: ${(e as Error).message}`);
    }
    return this.check(topic, value);
  }

  private check(topic: string, value: unknown): unknown {
    const schema = this.schemas.get(topic);
    if (schema === undefined) throw new RecordValidationError(`unknown topic "${topic}"`);
    if (schema === null) return value;
    const parsed = schema.safeParse(value);
    if (!parsed.success) throw new RecordValidationError(`${topic}: ${formatIssues(parsed.error)}`);
    return parsed.data;
  }
}

/** The dead letter for a log record refused by `processor`. */
export function deadLetterForRecord(
  record: LogRecord,
  code: DeadLetterCode,
  reason: string,
  processor: string | null,
  payload: string = record.value,
): DeadLetter {
  return {
    id: contentHash('record', record.topic, record.partition, record.offset, processor, reason),
    code,
    reason,
    processor,
    origin: {
      kind: 'record',
      topic: record.topic,
      partition: record.partition,
      offset: String(record.offset),
    },
    payload: truncatePayload(payload),
  };
}
