import { type SpawnSyncReturns, spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** deploy/image/podman.sh: podman with the project's containers.conf and its storage under .deploy/. */
export const PODMAN = fileURLToPath(new URL('../../deploy/image/podman.sh', import.meta.url));
/** What the services project's global setup builds (test/setup/services.ts: deploy/image/build.sh worker). */
export const WORKER_IMAGE = process.env.BIOALCHEMY_TEST_IMAGE ?? 'localhost/bioalchemy:worker';
/** The embedded default's variant, with chdb (deploy/image/build.sh all-in-one). */
export const ALL_IN_ONE_IMAGE = 'localhost/bioalchemy:all-in-one';

export function podman(args: string[], timeout = 120_000): SpawnSyncReturns<string> {
  return spawnSync('bash', [PODMAN, ...args], { encoding: 'utf8', timeout });
}

/** podman, async: a container that talks to this process's test LLM server must not block its loop. */
export function podmanAsync(
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [PODMAN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c;
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c;
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The image's inspect JSON, failing with how to build it when it is not there. */
export function inspectImage(image = WORKER_IMAGE): {
  Size: number;
  Config: { User: string; Labels: Record<string, string>; Entrypoint: string[] };
} {
  const r = podman(['image', 'inspect', image]);
  if (r.status !== 0)
    throw new Error(
      `no image ${image} (${r.stderr.trim()}): build it with deploy/image/build.sh ${image.endsWith(':all-in-one') ? 'all-in-one' : 'worker'}`,
    );
  return JSON.parse(r.stdout)[0];
}

/** The flags every test container runs with: as users run it, read-only and non-root, host network. */
export const HARDENED = ['--read-only', '--user', '1000:1000', '--network=host', '--cap-drop=all'];
