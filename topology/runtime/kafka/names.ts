/**
 * One application's names on a shared cluster (Kafka Streams' application.id): every topic,
 * changelog, consumer group and transactional id of the app is `<app>.<name>`, so several
 * pipelines share a cluster and `bioalchemy reset --app NAME` finds one app's topics and groups.
 * Inside the engine names stay unprefixed; only the Kafka runtime sees the prefixed ones.
 */
export class KafkaNames {
  private readonly toKafka = new Map<string, string>();
  private readonly fromKafka = new Map<string, string>();
  readonly prefix: string;

  constructor(readonly app: string) {
    if (!/^[A-Za-z0-9_-]+$/.test(app))
      throw new Error(`app "${app}": use letters, digits, "_" and "-" (it prefixes Kafka topic names)`);
    this.prefix = `${app}.`;
  }

  /** A topic's name on Kafka. */
  topic(name: string): string {
    let kafka = this.toKafka.get(name);
    if (kafka === undefined) {
      kafka = this.prefix + name;
      this.toKafka.set(name, kafka);
      this.fromKafka.set(kafka, name);
    }
    return kafka;
  }

  /** A Kafka topic's name in the engine. */
  engineTopic(kafka: string): string {
    let name = this.fromKafka.get(kafka);
    if (name === undefined) {
      name = kafka.startsWith(this.prefix) ? kafka.slice(this.prefix.length) : kafka;
      this.fromKafka.set(kafka, name);
    }
    return name;
  }

  group(name: string): string {
    return this.prefix + name;
  }

  /**
   * The group id of a reader that joins no group (the partition reader, the readable wait):
   * librdkafka requires one and asks for its coordinator, so the broker checks READ on it. Under
   * one prefix, for one prefixed ACL.
   */
  readerGroup(suffix: string): string {
    return `${this.readerGroupPrefix}${suffix}`;
  }

  get readerGroupPrefix(): string {
    return `${this.prefix}reader.`;
  }

  /** A transactional id: one per worker of a group (KIP-447), or one per input partition (kafkajs). */
  transactionalId(group: string, suffix: string | number): string {
    return `${this.prefix}${group}.${suffix}`;
  }

  /** Whether a Kafka topic or group name is this app's. */
  owns(kafkaName: string): boolean {
    return kafkaName.startsWith(this.prefix);
  }
}
