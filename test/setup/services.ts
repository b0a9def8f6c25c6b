import { spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { script } from './step.js';

const SERVICES = fileURLToPath(new URL('../../deploy/services.sh', import.meta.url));
const PORTS = { kafka: 19092, clickhouse: 18123, registry: 18081 } as const;

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    }).on('error', () => resolve(false));
  });

/**
 * Builds what the services project's tests run, each cached in the machine's cache (seconds when
 * warm): the trainer venv (test/services/trainers.test.ts) and the images (test/deploy/image.test.ts,
 * compose-up.test.ts, which podman-compose brings up). Then starts Kafka, ClickHouse and the Schema
 * Registry through the same scripts users run, and afterwards stops the ones it started; services
 * already running are left alone. BIOALCHEMY_SERVICES=external skips both (the caller manages them).
 */
export default async function setup(): Promise<() => void> {
  script('the trainer venv (deploy/trainer-venv.sh)', 'deploy/trainer-venv.sh');
  script('podman-compose', 'deploy/tools/podman-compose.sh');
  script('the worker image (deploy/image/build.sh worker)', 'deploy/image/build.sh', 'worker');
  script('the all-in-one image (deploy/image/build.sh all-in-one)', 'deploy/image/build.sh', 'all-in-one');
  if (process.env.BIOALCHEMY_SERVICES === 'external') return () => {};
  const absent: string[] = [];
  for (const [name, port] of Object.entries(PORTS)) if (!(await listening(port))) absent.push(name);
  if (absent.length)
    script(`the services (deploy/services.sh up ${absent.join(' ')})`, 'deploy/services.sh', 'up', ...absent);
  return () => {
    if (absent.length) spawnSync('bash', [SERVICES, 'down', ...absent], { stdio: ['ignore', 2, 2] });
  };
}
