import { writeFileSync } from 'node:fs';
import { Field, Float64, Int32, List, Struct, Table, tableToIPC, Utf8, vectorFromArray } from 'apache-arrow';
import * as parquet from 'parquet-wasm/node';
import type { MixState } from '../../schemas/mix-state.js';
import type { RolloutItem } from '../../schemas/rollout-batch.js';
import { copiesOf, isHeldOut } from '../sampler/selection.js';
import { epochOrder, epochSeed } from './order.js';
import { type PoolItem, type RowSettings, rolloutRow } from './row.js';

/**
 * The rows of a split: `train` is the mix's selection, each item as many times as it has copies,
 * in the deterministic order of epoch 0 of the run named "export"; `heldout` is every held-out
 * item once, by id.
 */
export function exportRows(
  items: readonly PoolItem[],
  mix: MixState,
  split: 'train' | 'heldout',
  settings: RowSettings,
): RolloutItem[] {
  const byId = new Map(items.map((i) => [i.id, i]));
  if (split === 'heldout') {
    return items
      .filter((i) => isHeldOut(mix.heldOut, i))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((item, index) => rolloutRow(item, settings, { index, split, copy: 0 }));
  }
  const selected = items.map((i) => ({ id: i.id, copies: copiesOf(mix, i) })).filter((s) => s.copies > 0);
  return epochOrder(selected, epochSeed(mix.seed, 'export', 0)).map((slot, index) =>
    rolloutRow(byId.get(slot.id)!, settings, { index, split, copy: slot.copy }),
  );
}

export function writeJsonl(rows: readonly RolloutItem[], path: string): void {
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
