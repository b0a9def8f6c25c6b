import { EmbeddedRuntime } from './embedded.js';
import type { Runtime } from './types.js';

/** The runtime is configuration, never code: `file:DIR` (embedded log) or `kafka://host:port,...`. */
export async function openRuntime(url: string): Promise<Runtime> {
  if (url.startsWith('file:')) return EmbeddedRuntime.open(url.slice('file:'.length) || './data');
  if (url === ':memory:') return EmbeddedRuntime.open(':memory:');
  if (url.startsWith('kafka://')) {
    // Loaded on demand: the embedded default never pays for the Kafka clients.
    const { KafkaRuntime } = await import('./kafka/index.js');
    return KafkaRuntime.open(url);
  }
  throw new Error(`log URL "${url}": expected file:DIR or kafka://host:port`);
}
