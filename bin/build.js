#!/usr/bin/env node
// Compiles the package to dist/ (tsconfig.build.json), then links in what the compiled modules
// read beside themselves by relative URL (JSON data, the dashboard's page, deploy/ scripts and
// migrations, package.json for --version): links, not copies, so they never go stale.
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** tsc's ExitStatus.DiagnosticsPresent_OutputsGenerated. */
const TYPE_ERRORS_OUTPUT_WRITTEN = 2;
const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const built = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], {
  stdio: 'inherit',
});
// tsc's status 2: type errors, the JavaScript written all the same. The links are made and the
// status kept, so `npm run build` fails on them while the test set-up can still run what it runs
// (type errors are `npm run lint`'s to report).
if (built.status !== 0 && built.status !== TYPE_ERRORS_OUTPUT_WRITTEN) process.exit(built.status ?? 1);
for (const path of [
  'package.json',
  'deploy',
  'schemas/reference',
  'schemas/taxonomy',
  'reward/rules.json',
  'server/dashboard',
]) {
  const link = join(root, 'dist', path);
  mkdirSync(dirname(link), { recursive: true });
  rmSync(link, { recursive: true, force: true });
  symlinkSync(relative(dirname(link), join(root, path)), link);
}
process.exit(built.status);
