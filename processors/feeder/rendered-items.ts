import type { FeederConfig } from '../../schemas/feeder.js';
import { type PoolItem, rolloutRow } from './row.js';
import {
  AT_COPY,
  AT_INDEX,
  type BatchRow,
  type BatchSlot,
  COPY_MARK,
  INDEX_MARK,
  type Statements,
} from './store.js';

// A lease's items as JSON put together from strings: each item's row is rendered once, when it
// arrives, with placeholders for its position and copy, and a batch's items are rendered ahead of
// its lease by the background work (rendering each row at each epoch was most of a lease's cost).

/** A delivery's items (a JSON array) and the batch slots they fill. */
export interface RenderedBatch {
  items: string;
  slots: number[];
}

export class RenderedItems {
  /** Rendered items of batches cut and not yet leased. */
  private readonly ahead = new Map<string, RenderedBatch>();

  constructor(
    private readonly q: Statements,
    private readonly config: FeederConfig,
  ) {}

  /** An item's row with placeholders for its position and copy, as stored with the item. */
  rowOf(item: PoolItem): string {
    return JSON.stringify(
      rolloutRow(item, this.config, { index: INDEX_MARK, split: 'train', copy: COPY_MARK }),
    );
  }

  /** Renders a batch none of whose slots is acked ahead of its lease, unless already done. */
  renderAhead(b: BatchRow): void {
    if (!this.ahead.has(b.id) && b.acked_slots === '[]') this.ahead.set(b.id, this.render(b));
  }

  /**
   * The items of a delivery with their slots: the slots not yet acked, the ones rendered ahead
   * for a batch none of whose slots is acked.
   */
  take(b: BatchRow, acked: readonly number[]): RenderedBatch {
    const cached = this.ahead.get(b.id);
    this.ahead.delete(b.id);
    if (acked.length === 0 && cached) return cached;
    return this.render(b, acked);
  }

  private render(b: BatchRow, acked: readonly number[] = []): RenderedBatch {
    const skip = new Set(acked);
    const rows: string[] = [];
    const slots: number[] = [];
    (JSON.parse(b.slots) as BatchSlot[]).forEach(([id, copy, index], slot) => {
      if (skip.has(slot)) return;
      const row = (this.q.getRow.get(id) as { row: string | null }).row ?? this.storeRow(id);
      rows.push(row.replace(AT_INDEX, `"index":${index}`).replace(AT_COPY, `"copy":${copy}`));
      slots.push(slot);
    });
    return { items: `[${rows.join(',')}]`, slots };
  }

  /** The row of an item whose stored row was forgotten (other settings), stored again. */
  private storeRow(id: string): string {
    const row = this.rowOf(JSON.parse((this.q.getItem.get(id) as { body: string }).body) as PoolItem);
    this.q.putRow.run(row, id);
    return row;
  }
}
