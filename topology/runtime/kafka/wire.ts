import {
  JsonDeserializer,
  JsonSerializer,
  SchemaRegistryClient,
  SerdeType,
} from '@confluentinc/schemaregistry';
import { jsonSchemaOf, RECORD_SCHEMAS } from '../../../schemas/index.js';
import type { TopicSpec } from '../../topology.js';

/**
 * How values are laid out on Kafka: plain UTF-8 JSON, or with a Schema Registry the Confluent
 * wire format (magic byte, schema id, JSON) with each topic's JSON Schema registered as
 * `<topic>-value`. Inside the engine a value is always JSON text.
 */
export interface ValueWire {
  register(topics: readonly TopicSpec[]): Promise<void>;
  encode(topic: string, json: string): Promise<Buffer>;
  decode(topic: string, bytes: Buffer): Promise<string>;
}

export const plainJson: ValueWire = {
  async register() {},
  async encode(_topic, json) {
    return Buffer.from(json, 'utf8');
  },
  async decode(_topic, bytes) {
    return bytes.toString('utf8');
  },
};

export class RegistryWire implements ValueWire {
  private readonly client: SchemaRegistryClient;
  private readonly serializer: JsonSerializer;
  private readonly deserializer: JsonDeserializer;
  /** Topics without a schema travel as plain JSON. */
  private readonly registered = new Set<string>();

  constructor(url: string) {
    this.client = new SchemaRegistryClient({ baseURLs: [url] });
    this.serializer = new JsonSerializer(this.client, SerdeType.VALUE, { useLatestVersion: true });
    this.deserializer = new JsonDeserializer(this.client, SerdeType.VALUE, {});
  }

  async register(topics: readonly TopicSpec[]): Promise<void> {
    for (const t of topics) {
      if (!t.schema) continue;
      const schema = JSON.stringify({ title: t.schema, ...jsonSchemaOf(RECORD_SCHEMAS[t.schema]) });
      await this.client.register(`${t.name}-value`, { schemaType: 'JSON', schema }, false);
      this.registered.add(t.name);
    }
  }

  async encode(topic: string, json: string): Promise<Buffer> {
    if (!this.registered.has(topic)) return plainJson.encode(topic, json);
    return this.serializer.serialize(topic, JSON.parse(json));
  }

  async decode(topic: string, bytes: Buffer): Promise<string> {
    if (!this.registered.has(topic) || bytes[0] !== 0) return plainJson.decode(topic, bytes);
    return JSON.stringify(await this.deserializer.deserialize(topic, bytes));
  }
}
