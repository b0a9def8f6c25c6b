import { Command } from 'commander';

export function schemasCommand(): Command {
  const schemas = new Command('schemas').description('the record schemas');
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
