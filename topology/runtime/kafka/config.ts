import { z } from 'zod';
import { Compatibility, DEFAULT_COMPATIBILITY } from '../../../schemas/registry-subjects.js';

/**
 * A group member's session timeout, on both clients: short, so a killed worker's partitions move
 * within seconds. With static membership (rdkafka's group.instance.id) a stopped worker sends no
 * LeaveGroup, and the broker keeps it a member for this long.
 */
export const SESSION_TIMEOUT_MS = 6_000;

export const KafkaClientName = z.enum(['kafkajs', 'rdkafka']);

/** kafka://host:port[,host:port]?client=kafkajs|rdkafka&registry=http://...&compatibility=BACKWARD&app=NAME */
export interface KafkaUrl {
  readonly brokers: string[];
  readonly client: z.infer<typeof KafkaClientName>;
  readonly registry: string | null;
  /** The registry rule every subject the pipeline registers gets at start (the deployment's policy). */
  readonly compatibility: Compatibility;
  /** The application id (see KafkaOptions.app), when the URL names one. */
  readonly app: string | null;
}

const URL_PARAMETERS = ['client', 'registry', 'compatibility', 'app'];

export function parseKafkaUrl(url: string): KafkaUrl {
  const m = /^kafka:\/\/([^/?]+)\/?(?:\?(.*))?$/.exec(url);
  if (!m)
    throw new Error(`log URL "${url}": expected kafka://host:port[,host:port][?client=kafkajs|rdkafka]`);
  const params = new URLSearchParams(m[2] ?? '');
  // A misspelt parameter would do nothing, silently (a registry never used, a policy not applied).
  for (const name of params.keys())
    if (!URL_PARAMETERS.includes(name))
      throw new Error(`log URL "${url}": unknown parameter "${name}" (known: ${URL_PARAMETERS.join(', ')})`);
  const client = KafkaClientName.safeParse(params.get('client') ?? 'kafkajs');
  if (!client.success) throw new Error(`log URL "${url}": client must be kafkajs or rdkafka`);
  const compatibility = Compatibility.safeParse(params.get('compatibility') ?? DEFAULT_COMPATIBILITY);
  if (!compatibility.success)
    throw new Error(`log URL "${url}": compatibility must be one of ${Compatibility.options.join(', ')}`);
  if (params.has('compatibility') && !params.has('registry'))
    throw new Error(
      `log URL "${url}": compatibility applies to a Schema Registry: add registry=http://host:port`,
    );
  const brokers = m[1]!.split(',');
  for (const b of brokers)
    if (!/^[^:]+:\d+$/.test(b)) throw new Error(`log URL "${url}": broker "${b}" is not host:port`);
  return {
    brokers,
    client: client.data,
    registry: params.get('registry'),
    compatibility: compatibility.data,
    app: params.get('app'),
  };
}
