import { Command } from 'commander';
import type { EvalOptions } from '../eval.js';
import { wholeNumber } from '../usage.js';

export function evalCommand(): Command {
  const evaluate = new Command('eval').description('measure a stage against a reference');
  evaluate
    .command('classify')
    .description(
      'classify ingested MEDLINE articles whose MeSH headings reach the taxonomy (from title and abstract, with the ' +
        'configured LLM) and print precision, recall and F1 per category and micro/macro against the MeSH-derived labels',
    )
    .option('--limit <n>', 'evaluate at most n articles', wholeNumber)
    .addHelpText(
      'after',
      `
The reference is partial: indexers rarely use discipline headings, so the MeSH-derived labels miss
categories an article belongs to. The paper's figure (72.7% F1) is against human labels.
A label under classify.minConfidence is no prediction, as in the pipeline's classify stage.

Example:
  $ bioalchemy eval classify --limit 200`,
    )
    .action(async (_opts, cmd: Command) =>
      (await import('../eval.js')).evalClassify(cmd.optsWithGlobals<EvalOptions>()),
    );
  return evaluate;
}
