import type { Logger } from 'pino';
import type { Connection } from '../../schemas/connection.js';
import { EmbeddedRuntime } from './embedded.js';
import type { Runtime } from './types.js';

export interface RuntimeOptions {
  /** Kafka only: the application id prefixing every topic, group and transactional id (default "bioalchemy"). */
  readonly app?: string;
  /** Kafka only: this process's worker id (see KafkaOptions.worker). */
  readonly worker?: string;
  readonly log?: Logger;
  /** Kafka only: how the brokers and the registry are reached (config `connection`). */
  readonly connection?: Pick<Connection, 'kafka' | 'registry'>;
}

/** The runtime is configuration, never code: `file:DIR` (embedded log) or `kafka://host:port,...`. */
export async function openRuntime(url: string, opts: RuntimeOptions = {}): Promise<Runtime> {
  if (url.startsWith('file:')) return EmbeddedRuntime.open(url.slice('file:'.length) || './data');
  if (url === ':memory:') return EmbeddedRuntime.open(':memory:');
  if (url.startsWith('kafka://')) {
    // Loaded on demand: the embedded default never pays for the Kafka clients.
    const { KafkaRuntime } = await import('./kafka/index.js');
    return KafkaRuntime.open(url, opts);
  }
  throw new Error(`log URL "${url}": expected file:DIR or kafka://host:port`);
}
