import { writeFileSync } from 'node:fs';
import { Field, Float64, Int32, List, Struct, Table, tableToIPC, Utf8, vectorFromArray } from 'apache-arrow';
import * as parquet from 'parquet-wasm/node';
import type { Article } from '../../schemas/article.js';
import type { MixState } from '../../schemas/mix-state.js';
import type { ChatMessage, RolloutItem } from '../../schemas/rollout-batch.js';
import { copiesOf, heldOutArticles } from '../sampler/selection.js';
import { epochOrder, epochSeed } from './order.js';
import { type PoolItem, type RowSettings, rolloutRow } from './row.js';

const byId = <T extends { id: string }>(a: T, b: T) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * The rows of a split: `train` is the mix's selection, each item as many times as it has copies,
 * in the deterministic order of epoch 0 of the run named "export", less every QA of a held-out
 * article; `heldout` is every QA of a held-out article once, by id.
 */
export function exportRows(
  items: readonly PoolItem[],
  mix: MixState,
  split: 'train' | 'heldout',
  settings: RowSettings,
): RolloutItem[] {
  const held = heldOutArticles(items, mix.heldOut);
  const itemsById = new Map(items.map((i) => [i.id, i]));
  if (split === 'heldout') {
    return items
      .filter((i) => held.has(i.articleId))
      .sort(byId)
      .map((item, index) => rolloutRow(item, settings, { index, split, copy: 0 }));
  }
  const selected = items
    .filter((i) => !held.has(i.articleId))
    .map((i) => ({ id: i.id, copies: copiesOf(mix, i) }))
    .filter((s) => s.copies > 0);
  return epochOrder(selected, epochSeed(mix.seed, 'export', 0)).map((slot, index) =>
    rolloutRow(itemsById.get(slot.id)!, settings, { index, split, copy: slot.copy }),
  );
}

/** A row of `--format sft-jsonl`: the RL row's prompt answered, for supervised fine-tuning. */
export interface SftRow {
  readonly messages: ChatMessage[];
  readonly qa_id: string;
  readonly article_id: string;
  readonly split: 'train' | 'heldout';
  readonly topics: string[];
  readonly kind: 'mcq' | 'free-form';
  readonly copy: number;
}

/**
 * The SFT row of an RL row: the same prompt, answered by the assistant with the generator's
 * rationale where it gave one, then the answer as the RL rows' solution writes it (`Answer: C`),
 * so a model tuned on it answers in the form the reward reads.
 */
export function sftRow(row: RolloutItem, rationale: string): SftRow {
  const e = row.extra_info;
  return {
    messages: [
      ...row.prompt,
      {
        role: 'assistant',
        content: rationale.trim() ? `${rationale.trim()}\n\n${row.solution}` : row.solution,
      },
    ],
    qa_id: e.qa_id,
    article_id: e.article_id,
    split: e.split,
    topics: [...e.topics],
    kind: e.kind,
    copy: e.copy,
  };
}

/** What `--format cpt-text` needs of an article: its id, text, and what the held-out rule reads. */
export interface ArticleText {
  readonly id: string;
  readonly text: string;
  readonly source: string;
  readonly published: string | null;
}

/** An article's text for continued pre-training: title, abstract, then each section under its heading. */
export function articleText(a: Pick<Article, 'title' | 'abstract' | 'sections'>): string {
  return [a.title, a.abstract, ...a.sections.map((s) => (s.heading ? `${s.heading}\n${s.text}` : s.text))]
    .map((part) => part.trim())
    .filter(Boolean)
    .join('\n\n');
}

/**
 * `{"text"}` rows of a split for continued pre-training. An article's labels are the union of its
 * QA's; train takes each article not held out as many times as the mix's rule gives an item of
 * those labels (copiesOf: the α-smoothed upsampling of its topics), in epoch 0's order; heldout
 * takes each held-out article once. An article without a classified QA has no label, so no topic
 * asks for it: it is in neither split.
 */
export function cptRows(
  articles: readonly ArticleText[],
  items: readonly PoolItem[],
  mix: MixState,
  split: 'train' | 'heldout',
): { text: string }[] {
  const held = heldOutArticles(items, mix.heldOut);
  const labels = new Map<string, Set<string>>();
  for (const i of items) {
    const set = labels.get(i.articleId) ?? new Set<string>();
    for (const t of i.topics) set.add(t);
    labels.set(i.articleId, set);
  }
  const labelled = articles.filter((a) => labels.has(a.id));
  if (split === 'heldout')
    return labelled
      .filter((a) => held.has(a.id))
      .sort(byId)
      .map((a) => ({ text: a.text }));
  const textOf = new Map(labelled.map((a) => [a.id, a.text]));
  const selected = labelled
    .filter((a) => !held.has(a.id))
    .map((a) => ({ id: a.id, copies: copiesOf(mix, { ...a, topics: [...labels.get(a.id)!] }) }))
    .filter((s) => s.copies > 0);
  return epochOrder(selected, epochSeed(mix.seed, 'export', 0)).map((slot) => ({
    text: textOf.get(slot.id)!,
  }));
}

export function writeJsonl(rows: readonly object[], path: string): void {
  writeFileSync(path, rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
}

const utf8 = () => new Utf8();
const field = (name: string, type: ConstructorParameters<typeof Field>[1]) => new Field(name, type, false);
const strings = () => new List(field('item', utf8()));

/** verl's parquet: one row per item, the nested columns as Arrow structs and lists. */
export function writeVerlParquet(rows: readonly RolloutItem[], path: string): void {
  const message = new Struct([field('role', utf8()), field('content', utf8())]);
  const grade = new Struct(
    ['quality', 'difficulty', 'answerability', 'verifiability'].map((n) => field(n, new Float64())),
  );
  const extra = new Struct([
    field('index', new Int32()),
    field('split', utf8()),
    field('qa_id', utf8()),
    field('article_id', utf8()),
    field('topics', strings()),
    field('kind', utf8()),
    field('options', strings()),
    field('grade', grade),
    field('copy', new Int32()),
  ]);
  const truth = new Struct([
    field('answer', utf8()),
    field('kind', utf8()),
    field('options', strings()),
    field('aliases', strings()),
  ]);
  const column = <T>(pick: (r: RolloutItem) => T, type: ConstructorParameters<typeof Field>[1]) =>
    vectorFromArray(rows.map(pick), type as never);
  const table = new Table({
    data_source: column((r) => r.data_source, utf8()),
    prompt: column((r) => r.prompt, new List(field('item', message))),
    ability: column((r) => r.ability, utf8()),
    reward_model: column(
      (r) => r.reward_model,
      new Struct([field('style', utf8()), field('ground_truth', truth)]),
    ),
    extra_info: column((r) => r.extra_info, extra),
    ground_truth: column((r) => r.ground_truth, truth),
    answer: column((r) => r.answer, utf8()),
    solution: column((r) => r.solution, utf8()),
  });
  const props = new parquet.WriterPropertiesBuilder().setCompression(parquet.Compression.ZSTD).build();
  writeFileSync(path, parquet.writeParquet(parquet.Table.fromIPCStream(tableToIPC(table, 'stream')), props));
}
