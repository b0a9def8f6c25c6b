import type { StateChange } from '../../records.js';
import type { KafkaConnection } from './connection.js';

/**
 * State stores of one task: a local map per store, restored at start from a compacted changelog
 * topic per store (`<group>-<store>-changelog`), to which every committed step's changes are
 * written in the same transaction as its outputs.
 */
export class ChangelogState {
  private readonly stores = new Map<string, Map<string, string>>();

  constructor(
    private readonly runtime: KafkaConnection,
    private readonly group: string,
    readonly storeNames: readonly string[],
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
        partitions: 1,
        compacted: true,
        retentionMs: null,
        schema: null,
        description: '',
      })),
    );
  }

  /**
   * Reads every changelog to its committed end. Call after the task's transactional producer has
   * initialised: that aborts a crashed predecessor's open transaction, so the end is stable.
   */
  async restore(): Promise<void> {
    for (const [store, map] of this.stores) {
      map.clear();
      for (let from = 0; ; ) {
        const records = await this.runtime.read(this.changelogTopic(store), 0, from, 5000);
        if (!records.length) break;
        for (const r of records) {
          if (r.key === null) continue;
          const value = JSON.parse(r.value) as string | null;
          if (value === null) map.delete(r.key);
          else map.set(r.key, value);
        }
        from = records[records.length - 1]!.offset + 1;
      }
    }
  }

  get(store: string, key: string): string | undefined {
    return this.stores.get(store)?.get(key);
  }

  /** The changelog records for a step's changes: the value is the stored JSON text, or null to delete. */
  changelogRecords(changes: readonly StateChange[]) {
    return changes.map((c) => ({
      topic: this.changelogTopic(c.store),
      key: c.key,
      value: JSON.stringify(c.value),
      partition: 0,
    }));
  }

  apply(changes: readonly StateChange[]): void {
    for (const c of changes) {
      const map = this.stores.get(c.store);
      if (!map) continue;
      if (c.value === null) map.delete(c.key);
      else map.set(c.key, c.value);
    }
  }
}
