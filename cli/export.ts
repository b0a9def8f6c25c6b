import {
  type ArticleText,
  articleText,
  cptRows,
  exportRows,
  sftRow,
  writeJsonl,
  writeVerlParquet,
} from '../processors/feeder/export.js';
import { type PoolItem, poolItem } from '../processors/feeder/row.js';
import { pipelineTopology } from '../processors/pipeline.js';
import type { Article } from '../schemas/article.js';
import type { MixState } from '../schemas/mix-state.js';
import type { ClassifiedQa } from '../schemas/qa.js';
import type { RolloutItem } from '../schemas/rollout-batch.js';
import type { Runtime } from '../topology/runtime/types.js';
import { configOf, openLog, withdrawnQaIds } from './context.js';
import { type GlobalOptions, UsageError } from './usage.js';

export interface ExportOptions extends GlobalOptions {
  format: 'verl-parquet' | 'jsonl' | 'sft-jsonl' | 'cpt-text';
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

/** The text of each article of `ids` (the last record of one, if it came in twice). */
async function articlesOf(runtime: Runtime, ids: ReadonlySet<string>): Promise<ArticleText[]> {
  const out = new Map<string, ArticleText>();
  for await (const value of readAll(runtime, 'articles')) {
    const a = JSON.parse(value) as Article;
    if (ids.has(a.id))
      out.set(a.id, { id: a.id, text: articleText(a), source: a.source, published: a.published });
  }
  return [...out.values()];
}

/** Why there is no mix to export, in the words of what the log holds so far. */
async function whyNoMix(runtime: Runtime): Promise<string> {
  const count = async (topic: string) =>
    [...(await runtime.endOffsets(topic)).values()].reduce((a, b) => a + b, 0);
  const [articles, candidates, rejected, accepted] = await Promise.all(
    ['articles', 'qa.candidates', 'qa.rejected', 'qa.classified'].map(count),
  );
  if (articles === 0) return 'no articles yet: bioalchemy ingest <files>, then bioalchemy run, then export';
  if (accepted === 0)
    return (
      `nothing accepted yet, so nothing to export: ${articles} articles, ${candidates} candidate QA, ` +
      `${rejected} rejected (the run summary lists them by code), 0 accepted`
    );
  return `no mix.state yet for the ${accepted} accepted QA: run the sampler (bioalchemy run) first`;
}

export async function exportSplit(opts: ExportOptions): Promise<void> {
  const config = configOf(opts);
  const withdrawn = await withdrawnQaIds(config);
  const runtime = await openLog(config);
  try {
    await runtime.ensureTopics(pipelineTopology().topics);
    let mix: MixState | null = null;
    for await (const value of readAll(runtime, 'mix.state')) {
      const m = JSON.parse(value) as MixState;
      if (!mix || m.version > mix.version) mix = m;
    }
    if (!mix) throw new Error(await whyNoMix(runtime));
    const { topics, sources, publishedFrom } = mix.heldOut;
    if (opts.split === 'heldout' && topics.length === 0 && sources.length === 0 && publishedFrom === null)
      throw new UsageError(
        `mix version ${mix.version} holds nothing out: set sampler.heldOut in the config (--config) to ` +
          '{"topics": [...]}, {"sources": [...]} or {"publishedFrom": "YYYY[-MM[-DD]]"}, ' +
          'let bioalchemy run make a new mix, then export again',
      );
    const items = new Map<string, PoolItem>();
    const rationales = new Map<string, string>();
    for await (const value of readAll(runtime, 'qa.classified')) {
      const qa = JSON.parse(value) as ClassifiedQa;
      if (withdrawn.has(qa.candidate.id)) continue;
      const item = poolItem(qa);
      items.set(item.id, item);
      rationales.set(item.id, qa.candidate.rationale);
    }
    const pool = [...items.values()];
    const rows =
      opts.format === 'cpt-text'
        ? cptRows(await articlesOf(runtime, new Set(pool.map((i) => i.articleId))), pool, mix, opts.split)
        : opts.format === 'sft-jsonl'
          ? exportRows(pool, mix, opts.split, config.feeder).map((r) =>
              sftRow(r, rationales.get(r.extra_info.qa_id) ?? ''),
            )
          : exportRows(pool, mix, opts.split, config.feeder);
    // An empty file only fails later, in the trainer ('Instruction "train" corresponds to no data!').
    if (rows.length === 0)
      throw new UsageError(
        opts.split === 'heldout'
          ? `the held-out rule of mix version ${mix.version} (sampler.heldOut) matches no item`
          : `mix version ${mix.version} selects no item`,
      );
    if (opts.format === 'verl-parquet') writeVerlParquet(rows as RolloutItem[], opts.out);
    else writeJsonl(rows, opts.out);
    process.stderr.write(`${rows.length} ${opts.split} rows (mix version ${mix.version}) -> ${opts.out}\n`);
  } finally {
    await runtime.close();
  }
}
