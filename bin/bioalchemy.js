#!/usr/bin/env node
// TypeScript runs as is through tsx: no build step between an edit and the CLI.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
