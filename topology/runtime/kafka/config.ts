import { z } from 'zod';

/**
 * A group member's session timeout, on both clients: short, so a killed worker's partitions move
 * within seconds. With static membership (rdkafka's group.instance.id) a stopped worker sends no
 * LeaveGroup, and the broker keeps it a member for this long.
 */
export const SESSION_TIMEOUT_MS = 6_000;

export const KafkaClientName = z.enum(['kafkajs', 'rdkafka']);

/** kafka://host:port[,host:port]?client=kafkajs|rdkafka&registry=http://...&app=NAME */
export interface KafkaUrl {
  readonly brokers: string[];
  readonly client: z.infer<typeof KafkaClientName>;
  readonly registry: string | null;
  /** The application id (see KafkaOptions.app), when the URL names one. */
  readonly app: string | null;
}

export function parseKafkaUrl(url: string): KafkaUrl {
  const m = /^kafka:\/\/([^/?]+)\/?(?:\?(.*))?$/.exec(url);
  if (!m)
    throw new Error(`log URL "${url}": expected kafka://host:port[,host:port][?client=kafkajs|rdkafka]`);
  const params = new URLSearchParams(m[2] ?? '');
  const client = KafkaClientName.safeParse(params.get('client') ?? 'kafkajs');
  if (!client.success) throw new Error(`log URL "${url}": client must be kafkajs or rdkafka`);
  const brokers = m[1]!.split(',');
  for (const b of brokers)
    if (!/^[^:]+:\d+$/.test(b)) throw new Error(`log URL "${url}": broker "${b}" is not host:port`);
  return { brokers, client: client.data, registry: params.get('registry'), app: params.get('app') };
}
