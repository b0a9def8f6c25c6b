import { spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';

const SERVICES = fileURLToPath(new URL('../deploy/services.sh', import.meta.url));
const PORTS = { kafka: 19092, clickhouse: 18123, registry: 18081 } as const;

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    }).on('error', () => resolve(false));
  });

/**
 * Starts Kafka, ClickHouse and the Schema Registry through the same scripts CI and users run,
 * and afterwards stops the ones it started; services already running are left alone.
 * BIOALCHEMY_SERVICES=external skips both (the caller manages them).
 */
export default async function setup(): Promise<() => void> {
  if (process.env.BIOALCHEMY_SERVICES === 'external') return () => {};
  const absent: string[] = [];
  for (const [name, port] of Object.entries(PORTS)) if (!(await listening(port))) absent.push(name);
  if (absent.length) {
    const up = spawnSync('bash', [SERVICES, 'up', ...absent], { stdio: ['ignore', 2, 2] });
    if (up.status !== 0)
      throw new Error(`deploy/services.sh up ${absent.join(' ')} failed with status ${up.status}`);
  }
  return () => {
    if (absent.length) spawnSync('bash', [SERVICES, 'down', ...absent], { stdio: ['ignore', 2, 2] });
  };
}
