import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
/** What test/dashboard/browser.test.ts drives (Debian's chromium, through playwright-core). */
export const CHROMIUM = process.env.BIOALCHEMY_CHROMIUM ?? '/usr/bin/chromium';

function step(what: string, command: string, args: string[]): void {
  process.stderr.write(`test set-up: ${what}\n`);
  const done = spawnSync(command, args, { cwd: root, stdio: ['ignore', 2, 2] });
  if (done.status !== 0) throw new Error(`test set-up: ${what} failed (${command} ${args.join(' ')})`);
}

/**
 * What the tests use beyond node_modules, set up the way users and CI set it up, so that
 * `npm ci && npm test` passes on a fresh clone: the Python client's venv (deploy/py-venv.sh), and
 * Chromium where it is missing (apt-get, as .ci/run does). Each is kept when already there. (The
 * compiled CLI is built by the one test file that runs it, test/cli/start.test.ts.)
 */
export default function setup(): void {
  step('the Python client venv (deploy/py-venv.sh)', 'bash', [`${root}deploy/py-venv.sh`]);
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
}
