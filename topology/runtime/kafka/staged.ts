import type { OutgoingRecord } from '../../records.js';
import { FencedError, type LogTransaction } from '../types.js';
import type { ChangelogState } from './state.js';

export type Offset = { topic: string; partition: number; offset: number };

/**
 * The part of a Kafka step both clients share: changelog records and outputs are gathered, then
 * `send` puts them and the input offsets into the client's open transaction and commits it. A
 * fenced producer becomes a FencedError, so the task gives the step up instead of retrying it.
 */
export function stagedTransaction(
  state: ChangelogState,
  client: {
    send(outgoing: readonly OutgoingRecord[], offsets: readonly Offset[]): Promise<void>;
    committed(offsets: readonly Offset[]): void;
    abort(): Promise<void>;
  },
): LogTransaction {
  const outgoing: OutgoingRecord[] = [];
  let offsets: Offset[] = [];
  return {
    writeChangelogs: async (changes) => void outgoing.push(...state.changelogRecords(changes)),
    produce: async (records) => void outgoing.push(...records),
    commitOffsets: async (o) => {
      offsets = [...o.values()];
    },
    commit: async () => {
      await client.send(outgoing, offsets).catch(rethrowFenced);
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
