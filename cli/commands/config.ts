import { Command } from 'commander';
import type { GlobalOptions } from '../usage.js';

export function configCommand(): Command {
  const config = new Command('config').description('the configuration in effect');
  config
    .command('show')
    .description('print the config in effect (the file with every default filled in) as JSON')
    .addHelpText(
      'after',
      `
Secrets are named in config (an environment variable, a file), never written there, so the output
holds none of them.

Examples:
  $ bioalchemy config show --config prod.json`,
    )
    .action(async (_opts, cmd: Command) =>
      (await import('../config-show.js')).configShow(cmd.optsWithGlobals<GlobalOptions>()),
    );
  return config;
}
