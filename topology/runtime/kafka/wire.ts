import {
  type Compatibility as ClientCompatibility,
  type ClientConfig,
  JsonDeserializer,
  JsonSerializer,
  RestError,
  SchemaRegistryClient,
  SerdeType,
} from '@confluentinc/schemaregistry';
import type rdkafka from 'node-rdkafka';
import { type Compatibility, registrySchemaOf, subjectOf } from '../../../schemas/registry-subjects.js';
import type { LogRecord } from '../../records.js';
import type { TopicSpec } from '../../topology.js';
import type { KafkaNames } from './names.js';
import { type StampSeal, VALIDATED_AS_HEADER } from './stamp-seal.js';

/**
 * How values are laid out on Kafka: plain UTF-8 JSON, or with a Schema Registry the Confluent
 * wire format (magic byte, schema id, JSON) with each topic's JSON Schema registered as
 * `<topic>-value`. Inside the engine a value is always JSON text.
 */
export interface ValueWire {
  register(topics: readonly TopicSpec[]): Promise<void>;
  /** The bytes on the wire of each record's value (topic: the engine's name), in order; a batch at a time. */
  encode(records: readonly { topic: string; value: string }[]): Promise<Buffer[]>;
  /**
   * The JSON text of each message's value (topic: the name on Kafka), in order; a batch at a time.
   * A value that cannot be taken off the wire at all comes back as an UnreadableValue; a failure
   * that may pass (the registry unreachable) is thrown, so the step is tried again.
   */
  decode(messages: readonly { topic: string; value: Buffer | null }[]): Promise<WireValue[]>;
}

/**
 * A value that is not in the wire format (a cut Confluent frame, a schema id the registry does not
 * know, a frame whose payload is not JSON): anyone can produce such bytes to a topic, and one of
 * them must not stop the partition. The record goes on to its task with `reason`, which
 * dead-letters it (topology/codec.ts); `text` is its bytes as UTF-8, for the dead letter's payload.
 */
export class UnreadableValue {
  constructor(
    readonly reason: string,
    readonly text: string,
  ) {}
}

export type WireValue = string | UnreadableValue;

/** A decoded value as LogRecord fields. */
export function recordValue(v: WireValue): { value: string; unreadable?: string } {
  return typeof v === 'string' ? { value: v } : { value: v.text, unreadable: v.reason };
}

/** A header value as kafkajs or node-rdkafka hands it over, as text. */
export function headerText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return undefined;
}

const plainBytes = (json: string) => Buffer.from(json, 'utf8');
const plainText = (bytes: Buffer | null) => (bytes ? bytes.toString('utf8') : '');

export const plainJson: ValueWire = {
  async register() {},
  async encode(records) {
    return records.map((r) => plainBytes(r.value));
  },
  async decode(messages) {
    return messages.map((m) => plainText(m.value));
  },
};

export class RegistryWire implements ValueWire {
  private readonly client: SchemaRegistryClient;
  private readonly serializer: JsonSerializer;
  private readonly deserializer: JsonDeserializer;
  /** The subject of each topic (name on Kafka) with a schema; topics without one travel as plain JSON. */
  private readonly subjects = new Map<string, string>();

  constructor(
    client: ClientConfig,
    private readonly names: KafkaNames,
    private readonly compatibility: Compatibility,
  ) {
    this.client = new SchemaRegistryClient(client);
    this.serializer = new JsonSerializer(this.client, SerdeType.VALUE, {
      useLatestVersion: true,
      subjectNameStrategy: (topic) => this.subjects.get(topic) ?? `${topic}-value`,
    });
    // Readers find a record's schema by the id in its frame, whatever subject holds it: records
    // written under an earlier generation's subject read as well as the current one's.
    this.deserializer = new JsonDeserializer(this.client, SerdeType.VALUE, {});
  }

  /**
   * Registers each topic's schema under its subject, with the deployment's compatibility rule set
   * on the subject first, so the registry judges the new schema by that rule and not by whatever
   * the subject or the registry's default held. A schema the rule refuses stops the start.
   */
  async register(topics: readonly TopicSpec[]): Promise<void> {
    for (const t of topics) {
      if (!t.schema) continue;
      const topic = this.names.topic(t.name);
      const subject = subjectOf(topic, t.schema);
      // A registry that knows no rule for a subject it does not hold (Apicurio) takes one after the first version.
      const ruled = await this.setRule(subject);
      try {
        await this.client.register(
          subject,
          { schemaType: 'JSON', schema: registrySchemaOf(t.schema) },
          false,
        );
      } catch (e) {
        if (e instanceof RestError && e.status === 409)
          throw new Error(
            `Schema Registry: subject ${subject} refuses the ${t.schema} schema under ${this.compatibility} ` +
              `(${e.message}); \`bioalchemy schemas --check\` says what the upgrade breaks`,
          );
        throw e;
      }
      if (!ruled) await this.setRule(subject);
      this.subjects.set(topic, subject);
    }
  }

  /** Sets the subject's compatibility rule; false when the registry holds no such subject yet. */
  private async setRule(subject: string): Promise<boolean> {
    try {
      await this.client.updateCompatibility(subject, this.compatibility as ClientCompatibility);
      return true;
    } catch (e) {
      if (e instanceof RestError && e.status === 404) return false;
      throw e;
    }
  }

  async encode(records: readonly { topic: string; value: string }[]): Promise<Buffer[]> {
    const out: Buffer[] = [];
    for (const r of records) {
      const topic = this.names.topic(r.topic);
      // A JSON null is a compacted topic's tombstone (a settled llm.journal reply), which the
      // serializer refuses ("message is empty"): it travels plain, and reads back as it went.
      out.push(
        this.subjects.has(topic) && r.value !== 'null'
          ? await this.serializer.serialize(topic, JSON.parse(r.value))
          : plainBytes(r.value),
      );
    }
    return out;
  }

  async decode(messages: readonly { topic: string; value: Buffer | null }[]): Promise<WireValue[]> {
    const out: WireValue[] = [];
    for (const { topic, value } of messages) {
      out.push(
        value && value[0] === 0 && this.subjects.has(topic)
          ? await this.decodeFramed(topic, value)
          : plainText(value),
      );
    }
    return out;
  }

  /**
   * A value in the Confluent framing: magic byte 0, a 4-byte schema id, JSON. Before, any failure
   * here was thrown out of the poll, and the same record failed it again after every rewind: one
   * such record produced by hand stalled its partition for good.
   */
  private async decodeFramed(topic: string, value: Buffer): Promise<WireValue> {
    if (value.length < 5)
      return new UnreadableValue(
        `Confluent wire format: a value of ${value.length} bytes, shorter than the 5-byte header (magic byte, schema id)`,
        plainText(value),
      );
    try {
      return JSON.stringify(await this.deserializer.deserialize(topic, value));
    } catch (e) {
      // The registry unreachable or failing is no fault of the record: thrown, the step retries.
      const permanent =
        e instanceof SyntaxError ||
        (e instanceof RestError && e.status >= 400 && e.status < 500 && e.status !== 408 && e.status !== 429);
      if (!permanent) throw e;
      return new UnreadableValue(
        `Confluent wire format: schema id ${value.readInt32BE(1)}: ${(e as Error).message}`,
        plainText(value),
      );
    }
  }
}

/**
 * A consumed message as a log record (topic: the engine's name), with the value already taken off
 * the wire; its stamp is kept only when its seal verifies.
 */
export function rdkafkaRecord(
  m: rdkafka.Message,
  value: WireValue,
  topic: string,
  seal: StampSeal,
): LogRecord {
  let header: string | undefined;
  for (const h of m.headers ?? []) header ??= headerText(h[VALIDATED_AS_HEADER]);
  const validatedAs = seal.verified(header, m.value ?? null);
  return {
    topic,
    partition: m.partition,
    offset: m.offset,
    key: m.key == null ? null : m.key.toString(),
    ...recordValue(value),
    timestamp: m.timestamp ?? 0,
    validatedAs,
  };
}
