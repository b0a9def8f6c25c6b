import type { Offset, OutgoingRecord } from '../../records.js';
import { FencedError, type LogTransaction } from '../types.js';
import type { ChangelogState } from './state.js';

/**
 * The part of a Kafka transaction both clients share: changelog records and outputs go to the
 * client as each step hands them over (so they travel while the next step is processed), then
 * `commit` adds the input offsets, flushes and commits. A fenced producer becomes a FencedError,
 * so the task gives the transaction up instead of retrying it.
 */
export function kafkaTransaction(
  state: ChangelogState,
  client: {
    /** Hands records to the open transaction; they may still be in flight when this resolves. */
    send(records: readonly OutgoingRecord[]): Promise<void>;
    /** Waits for what was sent, adds the offsets to the transaction and commits it. */
    commit(offsets: readonly Offset[]): Promise<void>;
    committed(offsets: readonly Offset[]): void;
    abort(): Promise<void>;
  },
): LogTransaction {
  let offsets: Offset[] = [];
  return {
    writeChangelogs: (changes) => client.send(state.changelogRecords(changes)).catch(rethrowFenced),
    produce: (records) => client.send(records).catch(rethrowFenced),
    commitOffsets: async (o) => {
      offsets = [...o.values()];
    },
    commit: async () => {
      await client.commit(offsets).catch(rethrowFenced);
      client.committed(offsets);
    },
    abort: () => client.abort(),
  };
}

export function rethrowFenced(e: unknown): never {
  const text = `${(e as Error)?.name} ${(e as { type?: string })?.type} ${(e as Error)?.message}`;
  throw /INVALID_PRODUCER_EPOCH|PRODUCER_FENCED|fenced/i.test(text)
    ? new FencedError(String((e as Error).message))
    : e;
}
