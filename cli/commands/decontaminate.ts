import { Command } from 'commander';
import type { DecontaminateOptions } from '../decontaminate.js';

export function decontaminateCommand(): Command {
  return new Command('decontaminate')
    .description(
      "what of the current mix eval sets would remove: each classified QA sharing a word 13-gram with an item's question+options or near-duplicating it (contaminated), or made from an item's source article (eval-source)",
    )
    .argument(
      '<eval-sets...>',
      'eval set files (JSON lines or parquet of {id, question, options?, pmid?, doi?}) or folders of them',
    )
    .requiredOption(
      '--report',
      'report only: nothing is changed (grade applies the sets listed in grade.evalSets)',
    )
    .option('--json', 'print JSON: counts per set and every QA removed, with the item it matched')
    .addHelpText(
      'after',
      `
Add a set to grade.evalSets (or to a folder named there) for grade to reject such QA from then on.

Examples:
  $ bioalchemy decontaminate --report evals/pubmedqa.jsonl
  $ bioalchemy decontaminate --report evals/ --json | jq .removed`,
    )
    .action(async (paths: string[], _opts, cmd: Command) =>
      (await import('../decontaminate.js')).decontaminateReport(
        paths,
        cmd.optsWithGlobals<DecontaminateOptions>(),
      ),
    );
}
