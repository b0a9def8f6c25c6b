import { Command, Option } from 'commander';
import type { ExportOptions } from '../export.js';

export function exportCommand(): Command {
  return new Command('export')
    .description(
      "write the latest mix's training or held-out split for RL (verl parquet, JSON lines), SFT (chat messages) or CPT (article text)",
    )
    .addOption(
      new Option(
        '--format <format>',
        'verl-parquet (verl, datasets), jsonl (TRL, datasets), sft-jsonl (chat messages), cpt-text ({"text"} lines)',
      )
        .choices(['verl-parquet', 'jsonl', 'sft-jsonl', 'cpt-text'])
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

One held-out rule for every format: an article is held out when any of its QA is (a held-out
topic among its labels, its source, its date), and then none of its QA or text is in a train
export. sft-jsonl rows are {messages, qa_id, article_id, split, topics, kind, copy}: the RL prompt
and the assistant's answer (the generator's rationale where it gave one, then "Answer: ..."), the
same selection and copies as the RL rows. cpt-text rows are {"text"}: title, abstract and sections
of each article with a classified QA, as many times as the mix's rule gives an item of the
article's labels (the α-mix applied to articles); heldout holds each held-out article once.

Examples:
  $ bioalchemy export --format verl-parquet --split train --out train.parquet
  $ bioalchemy export --format jsonl --split heldout --out heldout.jsonl
  $ bioalchemy export --format sft-jsonl --out sft.jsonl
  $ bioalchemy export --format cpt-text --split heldout --out cpt-heldout.jsonl`,
    )
    .action(async (_opts, cmd: Command) =>
      (await import('../export.js')).exportSplit(cmd.optsWithGlobals<ExportOptions>()),
    );
}
