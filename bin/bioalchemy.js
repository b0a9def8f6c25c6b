#!/usr/bin/env -S node --max-semi-space-size=64
// A 64 MB young generation (V8's default is 16): a step holds a whole batch of records, its
// parsed values and its outputs at once, and with the default most of them outlived a scavenge and
// were copied into the old generation; GC took a fifth of the Kafka emit path's time (BENCHMARKS.md).
// TypeScript runs as is through tsx: no build step between an edit and the CLI.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
