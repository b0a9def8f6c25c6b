#!/usr/bin/env -S node --max-semi-space-size=64
// The CLI's young generation (see bin/bioalchemy.js), so that the figures are the CLI's.
import { register } from 'tsx/esm/api';

register();
await import('../bench/index.ts');
