import { exportRows, writeJsonl, writeVerlParquet } from '../processors/feeder/export.js';
import { type PoolItem, poolItem } from '../processors/feeder/row.js';
import { pipelineTopology } from '../processors/pipeline.js';
import type { MixState } from '../schemas/mix-state.js';
import type { ClassifiedQa } from '../schemas/qa.js';
import { openRuntime } from '../topology/runtime/open.js';
import type { Runtime } from '../topology/runtime/types.js';
import { configOf } from './context.js';
import { type GlobalOptions, UsageError } from './usage.js';

export interface ExportOptions extends GlobalOptions {
  format: 'verl-parquet' | 'jsonl';
  split: 'train' | 'heldout';
  out: string;
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

export async function exportSplit(opts: ExportOptions): Promise<void> {
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
    const { topics, sources, publishedFrom } = mix.heldOut;
    if (opts.split === 'heldout' && topics.length === 0 && sources.length === 0 && publishedFrom === null)
      throw new UsageError(
        `mix version ${mix.version} holds nothing out: set sampler.heldOut in the config (--config) to ` +
          '{"topics": [...]}, {"sources": [...]} or {"publishedFrom": "YYYY[-MM[-DD]]"}, ' +
          'let bioalchemy run make a new mix, then export again',
      );
    const items = new Map<string, PoolItem>();
    for await (const value of readAll(runtime, 'qa.classified')) {
      const item = poolItem(JSON.parse(value) as ClassifiedQa);
      items.set(item.id, item);
    }
    const rows = exportRows([...items.values()], mix, opts.split, config.feeder);
    // An empty file only fails later, in the trainer ('Instruction "train" corresponds to no data!').
    if (rows.length === 0)
      throw new UsageError(
        opts.split === 'heldout'
          ? `the held-out rule of mix version ${mix.version} (sampler.heldOut) matches no item`
          : `mix version ${mix.version} selects no item`,
      );
    if (opts.format === 'jsonl') writeJsonl(rows, opts.out);
    else writeVerlParquet(rows, opts.out);
    process.stderr.write(`${rows.length} ${opts.split} rows (mix version ${mix.version}) -> ${opts.out}\n`);
  } finally {
    await runtime.close();
  }
}
