import { Command, InvalidArgumentError } from 'commander';
import type { MixOptions } from '../mix.js';

function alphaValue(value: string): number {
  const a = Number(value);
  if (!(value.trim() !== '' && a >= 0 && a <= 1))
    throw new InvalidArgumentError('α is a number from 0 to 1.');
  return a;
}

export function mixCommand(): Command {
  return new Command('mix')
    .description(
      "the training mix for an α in the paper's terms: Table 13 from the reference, and with QA in ClickHouse the selection's size, yield, max/min ratio, upsample and distances (Table 5)",
    )
    .option('--alpha <a>', 'smoothing exponent, 0 to 1 (default: the config sampler.alpha)', alphaValue)
    .option(
      '--reference <file>',
      'a reference JSON file (default: the config, else PubMed biology 2020-2024)',
    )
    .option('--json', 'print JSON instead of tables')
    .option('--plot <file.svg>', 'also draw reference, target and live shares per topic as SVG')
    .addHelpText(
      'after',
      `
With chdb (the default), stop \`bioalchemy run\` first: one process at a time opens its folder.

Examples:
  $ bioalchemy mix --alpha 1.0             # the paper's Table 13 percentages
  $ bioalchemy mix --alpha 0.5 --plot mix.svg
  $ bioalchemy mix --json | jq .live.mix`,
    )
    .action(async (_opts, cmd: Command) =>
      (await import('../mix.js')).mix(cmd.optsWithGlobals<MixOptions>()),
    );
}
