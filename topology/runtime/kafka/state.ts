import { GLOBAL, type StateChange } from '../../records.js';
import type { KafkaConnection } from './connection.js';

/** How long a restore took and what it read: for logs, metrics and the scale benchmark. */
export interface Restored {
  readonly partitions: readonly number[];
  readonly records: number;
  readonly keys: number;
  readonly ms: number;
}

/**
 * State stores of one group member, per scope (Kafka Streams' task): a local map per store and
 * input partition, restored from partition p of the store's compacted changelog topic
 * (`<group>-<store>-changelog`, as many partitions as the inputs; one for a global store) when
 * the member is assigned input partition p, and dropped when p is revoked. Every committed step's
 * changes go to the changelog in the same transaction as its outputs.
 */
export class ChangelogState {
  /** store -> scope -> key -> value; a scope is present while this member holds it. */
  private readonly stores = new Map<string, Map<number, Map<string, string>>>();
  private readonly heldScopes = new Set<number>();

  constructor(
    private readonly runtime: KafkaConnection,
    private readonly group: string,
    readonly storeNames: readonly string[],
    /** Partitions of each changelog: the inputs' count, or 1 for a global store. */
    readonly partitions: number,
  ) {
    for (const s of storeNames) this.stores.set(s, new Map());
  }

  changelogTopic(store: string): string {
    return `${this.group}-${store}-changelog`;
  }

  async ensureTopics(): Promise<void> {
    await this.runtime.ensureTopics(
      this.storeNames.map((s) => ({
        name: this.changelogTopic(s),
        partitions: this.partitions,
        compacted: true,
        retentionMs: null,
        schema: null,
        description: '',
      })),
    );
  }

  /** The changelog partition of a scope. */
  private changelogPartition(scope: number): number {
    return scope === GLOBAL ? 0 : scope;
  }

  held(): number[] {
    return [...this.heldScopes].sort((a, b) => a - b);
  }

  holds(scope: number): boolean {
    return this.heldScopes.has(scope);
  }

  /**
   * Reads the scopes' changelog partitions to their committed end, replacing what is held of
   * them. Call once the predecessor's open transaction on those partitions is over (a new
   * transactional producer's initialisation, or a stable offset fetch): then the end is stable.
   */
  async restore(scopes: readonly number[]): Promise<Restored> {
    const started = performance.now();
    let records = 0;
    let keys = 0;
    for (const scope of scopes) {
      this.heldScopes.add(scope);
      for (const [store, byScope] of this.stores) {
        const map = new Map<string, string>();
        byScope.set(scope, map);
        await this.runtime.readToEnd(this.changelogTopic(store), this.changelogPartition(scope), (batch) => {
          records += batch.length;
          for (const r of batch) {
            if (r.key === null) continue;
            const value = JSON.parse(r.value) as string | null;
            if (value === null) map.delete(r.key);
            else map.set(r.key, value);
          }
        });
        keys += map.size;
      }
    }
    return { partitions: [...scopes], records, keys, ms: performance.now() - started };
  }

  /** Forgets the state of scopes this member no longer owns. */
  drop(scopes: readonly number[]): void {
    for (const scope of scopes) {
      this.heldScopes.delete(scope);
      for (const byScope of this.stores.values()) byScope.delete(scope);
    }
  }

  get(store: string, key: string, scope: number): string | undefined {
    return this.stores.get(store)?.get(scope)?.get(key);
  }

  /** The changelog records for a step's changes: the value is the stored JSON text, or null to delete. */
  changelogRecords(changes: readonly StateChange[]) {
    return changes.map((c) => ({
      topic: this.changelogTopic(c.store),
      key: c.key,
      value: JSON.stringify(c.value),
      partition: this.changelogPartition(c.partition),
      from: c.partition,
    }));
  }

  /** Takes committed changes into the scopes still held (a revoked one's changes are its new owner's to read). */
  apply(changes: readonly StateChange[]): void {
    for (const c of changes) {
      const map = this.stores.get(c.store)?.get(c.partition);
      if (!map) continue;
      if (c.value === null) map.delete(c.key);
      else map.set(c.key, c.value);
    }
  }
}
