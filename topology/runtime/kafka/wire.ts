import {
  JsonDeserializer,
  JsonSerializer,
  SchemaRegistryClient,
  SerdeType,
} from '@confluentinc/schemaregistry';
import type rdkafka from 'node-rdkafka';
import { jsonSchemaOf, RECORD_SCHEMAS } from '../../../schemas/index.js';
import type { LogRecord } from '../../records.js';
import type { TopicSpec } from '../../topology.js';
import type { KafkaNames } from './names.js';

/**
 * How values are laid out on Kafka: plain UTF-8 JSON, or with a Schema Registry the Confluent
 * wire format (magic byte, schema id, JSON) with each topic's JSON Schema registered as
 * `<topic>-value`. Inside the engine a value is always JSON text.
 */
export interface ValueWire {
  register(topics: readonly TopicSpec[]): Promise<void>;
  /** The bytes on the wire of each record's value (topic: the engine's name), in order; a batch at a time. */
  encode(records: readonly { topic: string; value: string }[]): Promise<Buffer[]>;
  /** The JSON text of each message's value (topic: the name on Kafka), in order; a batch at a time. */
  decode(messages: readonly { topic: string; value: Buffer | null }[]): Promise<string[]>;
}

/** The Kafka header carrying LogRecord.validatedAs. */
export const VALIDATED_AS_HEADER = 'bioalchemy-validated-as';

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
  /** Topics (names on Kafka) without a schema travel as plain JSON. */
  private readonly registered = new Set<string>();

  constructor(
    url: string,
    private readonly names: KafkaNames,
  ) {
    this.client = new SchemaRegistryClient({ baseURLs: [url] });
    this.serializer = new JsonSerializer(this.client, SerdeType.VALUE, { useLatestVersion: true });
    this.deserializer = new JsonDeserializer(this.client, SerdeType.VALUE, {});
  }

  async register(topics: readonly TopicSpec[]): Promise<void> {
    for (const t of topics) {
      if (!t.schema) continue;
      const schema = JSON.stringify({ title: t.schema, ...jsonSchemaOf(RECORD_SCHEMAS[t.schema]) });
      const topic = this.names.topic(t.name);
      await this.client.register(`${topic}-value`, { schemaType: 'JSON', schema }, false);
      this.registered.add(topic);
    }
  }

  async encode(records: readonly { topic: string; value: string }[]): Promise<Buffer[]> {
    const out: Buffer[] = [];
    for (const r of records) {
      const topic = this.names.topic(r.topic);
      out.push(
        this.registered.has(topic)
          ? await this.serializer.serialize(topic, JSON.parse(r.value))
          : plainBytes(r.value),
      );
    }
    return out;
  }

  async decode(messages: readonly { topic: string; value: Buffer | null }[]): Promise<string[]> {
    const out: string[] = [];
    for (const { topic, value } of messages) {
      out.push(
        value && value[0] === 0 && this.registered.has(topic)
          ? JSON.stringify(await this.deserializer.deserialize(topic, value))
          : plainText(value),
      );
    }
    return out;
  }
}

/** A consumed message as a log record (topic: the engine's name), with the value's JSON text already taken off the wire. */
export function rdkafkaRecord(m: rdkafka.Message, value: string, topic: string): LogRecord {
  let validatedAs: string | undefined;
  for (const h of m.headers ?? []) validatedAs ??= headerText(h[VALIDATED_AS_HEADER]);
  return {
    topic,
    partition: m.partition,
    offset: m.offset,
    key: m.key == null ? null : m.key.toString(),
    value,
    timestamp: m.timestamp ?? 0,
    validatedAs,
  };
}
