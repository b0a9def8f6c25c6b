// `node --import ./import-log.mjs ...`: appends every module URL the process resolves to the file
// named by BIOALCHEMY_IMPORT_LOG, so a test can see what a command loaded.
import { register } from 'node:module';

register('./import-log-hooks.mjs', import.meta.url);
