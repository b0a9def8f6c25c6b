import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedRuntime } from '../../topology/runtime/embedded.js';
import { runtimeConformance } from './suite.js';

const dir = mkdtempSync(join(tmpdir(), 'bioalchemy-embedded-'));
let n = 0;

runtimeConformance('embedded (SQLite)', {
  url: () => `file:${dir}`,
  open: async () => EmbeddedRuntime.open(dir),
  kills: 20,
  prefix: () => `t${process.pid}x${n++}`,
});
