import { Command, Option } from 'commander';
import type { ExportOptions } from '../export.js';

export function exportCommand(): Command {
  return new Command('export')
    .description("write the latest mix's training or held-out items as verl parquet or JSON lines")
    .addOption(
      new Option('--format <format>', 'verl-parquet (verl, datasets) or jsonl (TRL, datasets)')
        .choices(['verl-parquet', 'jsonl'])
        .makeOptionMandatory(),
    )
    .addOption(
      new Option('--split <split>', 'the selection, or the held-out items')
        .choices(['train', 'heldout'])
        .default('train'),
    )
    .requiredOption('--out <path>', 'the file to write')
    .addHelpText(
      'after',
      `
Rows are the feeder's superset rows: data_source, prompt (chat messages), ability, reward_model
{style, ground_truth}, ground_truth, answer, solution, extra_info {index, split, qa_id, article_id,
topics, kind, options, grade, copy}. ground_truth (also in reward_model) is {answer, kind, options,
aliases}: all a reward function needs (verl's compute_score reads it without extra_info); answer is
the plain letter or answer. train holds each selected item as many times as the mix copies it, in a
deterministic order; heldout holds each held-out item once and needs a held-out rule
(sampler.heldOut: topics, sources or publishedFrom).

Examples:
  $ bioalchemy export --format verl-parquet --split train --out train.parquet
  $ bioalchemy export --format jsonl --split heldout --out heldout.jsonl`,
    )
    .action(async (_opts, cmd: Command) =>
      (await import('../export.js')).exportSplit(cmd.optsWithGlobals<ExportOptions>()),
    );
}
