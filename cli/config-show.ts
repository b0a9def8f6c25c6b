import { configOf } from './context.js';
import type { GlobalOptions } from './usage.js';

/** `config show`: the config in effect, defaults filled in. */
export async function configShow(opts: GlobalOptions): Promise<void> {
  process.stdout.write(`${JSON.stringify(configOf(opts), null, 2)}\n`);
}
