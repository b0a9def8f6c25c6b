import { Command } from 'commander';
import type { SchemasCheckOptions } from '../schemas-check.js';

export function schemasCommand(): Command {
  const schemas = new Command('schemas')
    .description('the record schemas')
    .option(
      '--check',
      "compare the code's schemas with the Schema Registry's latest of each subject, under the deployment's compatibility policy; registers nothing",
    )
    .option('--json', 'with --check: one JSON object per subject, one a line')
    .addHelpText(
      'after',
      `
--check exits 0 when a start would register every schema, 3 when the registry would refuse one
(each subject says new, unchanged, compatible or breaks). The registry and the policy are on the
config's log URL: kafka://host:port?registry=http://host:8081&compatibility=BACKWARD.

Example:
  $ bioalchemy schemas --check --config prod.json`,
    )
    .action(async (opts: { check?: boolean }, cmd: Command) => {
      if (!opts.check) {
        cmd.outputHelp();
        return;
      }
      await (await import('../schemas-check.js')).schemasCheck(cmd.optsWithGlobals<SchemasCheckOptions>());
    });
  schemas
    .command('export')
    .description('write one JSON Schema file per record into <dir>')
    .argument('<dir>', 'folder to write into (created if missing)')
    .addHelpText('after', '\nExample:\n  $ bioalchemy schemas export ./schemas-json')
    .action(async (dir: string) => {
      const { exportJsonSchemas } = await import('../../schemas/index.js');
      for (const file of exportJsonSchemas(dir)) process.stdout.write(`${file}\n`);
    });
  return schemas;
}
