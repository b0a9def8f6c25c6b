import { existsSync } from 'node:fs';
import { script, step } from './step.js';

/** What test/dashboard/browser.test.ts drives (Debian's chromium, through playwright-core). */
export const CHROMIUM = process.env.BIOALCHEMY_CHROMIUM ?? '/usr/bin/chromium';

/**
 * What the unit project's tests use beyond node_modules, set up the way users set it up, so that
 * `npm ci && npm test` passes on a fresh clone. Each script keeps what it built in the machine's
 * cache (deploy/lib.sh's CACHE_ROOT), so a warm run spends seconds here. (The compiled CLI is built
 * by the one test file that runs it, test/cli/start.test.ts.)
 */
export default function setup(): void {
  script('the Python client venv (deploy/py-venv.sh)', 'deploy/py-venv.sh');
  if (!existsSync(CHROMIUM)) {
    if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get'))
      throw new Error(
        `${CHROMIUM} missing: install chromium (Debian: apt-get install chromium) or set BIOALCHEMY_CHROMIUM`,
      );
    step('Chromium (apt-get install chromium)', 'bash', [
      '-c',
      'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null',
    ]);
  }
  // test/real-servers/: a cmake build of llama.cpp, minutes cold.
  script("llama-cpp-python's server (deploy/llama-cpp-python.sh)", 'deploy/llama-cpp-python.sh');
  // test/deploy/helm.test.ts and dockerfile.test.ts.
  for (const tool of ['helm', 'kubeconform', 'helm-unittest'])
    script(`${tool} (deploy/tools/go-tool.sh)`, 'deploy/tools/go-tool.sh', tool);
  script("kubernetes-validate's schemas", 'deploy/tools/kubernetes-validate.sh');
  script('hadolint', 'deploy/tools/hadolint.sh');
}
