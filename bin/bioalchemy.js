#!/usr/bin/env -S node --max-semi-space-size=64
// A 64 MB young generation (V8's default is 16): a step holds a whole batch of records, its
// parsed values and its outputs at once, and with the default most of them outlived a scavenge and
// were copied into the old generation; GC took a fifth of the Kafka emit path's time (BENCHMARKS.md).
// The CLI runs compiled: dist/, which `npm ci` builds (the `prepare` script, `npm run build`), so no
// TypeScript is transpiled at each start. BIOALCHEMY_FROM_SOURCE=1 runs cli/ as is through tsx, as
// the tests and `npm run dev` do: no build between an edit and the CLI.
let main;
if (process.env.BIOALCHEMY_FROM_SOURCE === '1') {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../cli/main.ts'));
} else {
  const compiled = new URL('../dist/cli/main.js', import.meta.url);
  try {
    ({ main } = await import(compiled.href));
  } catch (e) {
    if (e?.code !== 'ERR_MODULE_NOT_FOUND' || !String(e.message).includes(compiled.pathname)) throw e;
    process.stderr.write(
      'bioalchemy: the CLI is not built (no dist/): run `npm run build` (npm ci runs it)\n',
    );
    process.exit(1);
  }
}
process.exitCode = await main(process.argv.slice(2));
