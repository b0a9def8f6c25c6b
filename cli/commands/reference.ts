import { Command, InvalidArgumentError } from 'commander';
import type { BuildOptions } from '../reference.js';

function year(value: string): number {
  const y = Number(value);
  if (!/^\d{4}$/.test(value)) throw new InvalidArgumentError('a year is four digits.');
  return y;
}

export function referenceCommand(): Command {
  const reference = new Command('reference').description('reference distributions the mix follows');
  reference
    .command('build')
    .description(
      'count ingested MEDLINE articles per taxonomy category (their MeSH headings mapped through the tree; an article counts once in each of its categories) into a complete reference file',
    )
    .requiredOption('--from-year <year>', 'first publication year', year)
    .requiredOption('--to-year <year>', 'last publication year', year)
    .option('--out <file>', 'write the reference here (default: print it)')
    .option('--name <name>', 'the reference name (default: medline-<from>-<to>)')
    .addHelpText(
      'after',
      `
Use the file as the config's sampler.reference, or with bioalchemy mix --reference.

Example:
  $ bioalchemy ingest pubmed25n0001.xml.gz
  $ bioalchemy reference build --from-year 2020 --to-year 2024 --out pubmed-biology.json`,
    )
    .action(async (_opts, cmd: Command) =>
      (await import('../reference.js')).build(cmd.optsWithGlobals<BuildOptions>()),
    );
  return reference;
}
