import { Command, Option } from 'commander';
import { exportRows, writeJsonl, writeVerlParquet } from '../processors/feeder/export.js';
import { type PoolItem, poolItem } from '../processors/feeder/row.js';
import { pipelineTopology } from '../processors/pipeline.js';
import type { MixState } from '../schemas/mix-state.js';
import type { ClassifiedQa } from '../schemas/qa.js';
import { openRuntime } from '../topology/runtime/open.js';
import type { Runtime } from '../topology/runtime/types.js';
import { configOf, type GlobalOptions } from './context.js';

interface ExportOptions extends GlobalOptions {
  format: 'verl-parquet' | 'jsonl';
  split: 'train' | 'heldout';
  out: string;
}

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
topics, kind, options, grade, copy}. train holds each selected item as many times as the mix
copies it, in a deterministic order; heldout holds each held-out item once.

Examples:
  $ bioalchemy export --format verl-parquet --split train --out train.parquet
  $ bioalchemy export --format jsonl --split heldout --out heldout.jsonl`,
    )
    .action((_opts, cmd: Command) => exportSplit(cmd.optsWithGlobals<ExportOptions>()));
}

async function* readAll(runtime: Runtime, topic: string): AsyncGenerator<string> {
  for (const [partition, end] of (await runtime.endOffsets(topic)).entries()) {
    for (let from = 0; from < end; ) {
      const records = await runtime.read(topic, partition, from, 1000);
      if (records.length === 0) break;
      for (const r of records) yield r.value;
      from = records.at(-1)!.offset + 1;
    }
  }
}

async function exportSplit(opts: ExportOptions): Promise<void> {
  const config = configOf(opts);
  const runtime = await openRuntime(config.log);
  try {
    await runtime.ensureTopics(pipelineTopology().topics);
    let mix: MixState | null = null;
    for await (const value of readAll(runtime, 'mix.state')) {
      const m = JSON.parse(value) as MixState;
      if (!mix || m.version > mix.version) mix = m;
    }
    if (!mix) throw new Error('no mix.state yet: run the sampler (bioalchemy run) first');
    const items = new Map<string, PoolItem>();
    for await (const value of readAll(runtime, 'qa.classified')) {
      const item = poolItem(JSON.parse(value) as ClassifiedQa);
      items.set(item.id, item);
    }
    const rows = exportRows([...items.values()], mix, opts.split, config.feeder);
    if (opts.format === 'jsonl') writeJsonl(rows, opts.out);
    else writeVerlParquet(rows, opts.out);
    process.stderr.write(`${rows.length} ${opts.split} rows (mix version ${mix.version}) -> ${opts.out}\n`);
  } finally {
    await runtime.close();
  }
}
