import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * One step of the tests' set-up, run before any test so that a build never shares the two cores
 * with the suites, and timed: CI's log gives each step's cost (BENCHMARKS.md's CI table). Each
 * step is cached by its own script (seconds when warm). Its output goes to stderr as it comes.
 */
export function step(what: string, command: string, args: string[]): void {
  const started = Date.now();
  const done = spawnSync(command, args, { cwd: ROOT, stdio: ['ignore', 2, 2] });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  process.stderr.write(`test set-up: ${what}: ${seconds} s\n`);
  if (done.status !== 0) throw new Error(`test set-up: ${what} failed (${command} ${args.join(' ')})`);
}

/** A deploy/ script as a step. */
export const script = (what: string, path: string, ...args: string[]) =>
  step(what, 'bash', [`${ROOT}${path}`, ...args]);
