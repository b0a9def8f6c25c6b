#!/usr/bin/env -S node --max-semi-space-size=64
// A 64 MB young generation (V8's default is 16): a step holds a whole batch of records, its
// parsed values and its outputs at once, and with the default most of them outlived a scavenge and
// were copied into the old generation; GC took a fifth of the Kafka emit path's time (BENCHMARKS.md).
import { register } from 'tsx/esm/api';

register();
await import('../bench/index.ts');
