import { EndpointFactRecord, type EndpointFacts } from '../schemas/llm.js';
import { type OutgoingRecord, TOMBSTONE } from '../topology/records.js';
import type { Runtime } from '../topology/runtime/types.js';
import type { TopicSpec } from '../topology/topology.js';
import { parseJson } from './journal/log.js';

/**
 * What the layer learned of each endpoint's model, on a compacted topic of the log, so that it is
 * one mechanism on either runtime: the embedded log keeps it in the data folder, Kafka keeps it
 * for every worker of the deployment, and a restarted worker (or a new pod) starts from it.
 *
 * Keyed per endpoint, model and fact (`<endpoint> <model> contextTokens`, `... dialect.maxTokens`):
 * two workers that learn different facts of one model at the same time both keep theirs through
 * compaction, which keeps one record per key. The same fact learned twice keeps the later value.
 */
export const ENDPOINTS_TOPIC: TopicSpec = {
  name: 'llm.endpoints',
  partitions: 1,
  compacted: true,
  retentionMs: null,
  schema: 'llm-endpoint-fact',
  description:
    'what the LLM layer learned of each endpoint and model (refused fields, context, budget, concurrency)',
};

const keyOf = (endpoint: string, model: string) => `${endpoint} ${model}`;

/** One record per fact: each dialect field is a fact of its own. */
function factsOf(facts: EndpointFacts): [string, EndpointFacts][] {
  const { dialect, ...scalars } = facts;
  return [
    ...Object.entries(dialect ?? {}).map(([field, value]): [string, EndpointFacts] => [
      `dialect.${field}`,
      { dialect: { [field]: value } },
    ]),
    ...Object.entries(scalars).map(([fact, value]): [string, EndpointFacts] => [fact, { [fact]: value }]),
  ];
}

function merged(before: EndpointFacts, learned: EndpointFacts): EndpointFacts {
  const after = { ...before, ...learned };
  if (before.dialect || learned.dialect) after.dialect = { ...before.dialect, ...learned.dialect };
  return after;
}

export class EndpointMemory {
  /** Appends not yet done, chained so that the log holds them in the order they were learned. */
  private writing: Promise<void> = Promise.resolve();

  private constructor(
    private readonly runtime: Runtime | undefined,
    private readonly endpoints: Map<string, EndpointFacts>,
    private readonly onWriteError: (err: Error) => void,
  ) {}

  /** Kept nowhere: a layer with no log (tests, `llm check`) learns for its own life only. */
  static inMemory(): EndpointMemory {
    return new EndpointMemory(undefined, new Map(), () => {});
  }

  /** The facts on the log's topic, which must exist (ensureTopics); `onRead` counts records skipped. */
  static async open(
    runtime: Runtime,
    opts: {
      onRead?: (read: { facts: number; unreadable: number }) => void;
      onWriteError?: (err: Error) => void;
    } = {},
  ): Promise<EndpointMemory> {
    const { latest, unreadable } = await readFacts(runtime);
    const endpoints = new Map<string, EndpointFacts>();
    for (const { endpoint, model, facts } of latest.values()) {
      const key = keyOf(endpoint, model);
      endpoints.set(key, merged(endpoints.get(key) ?? {}, facts));
    }
    opts.onRead?.({ facts: latest.size, unreadable });
    return new EndpointMemory(runtime, endpoints, opts.onWriteError ?? (() => {}));
  }

  /**
   * Forgets what was learned of one endpoint (every endpoint without one): a tombstone per fact, so
   * the next start learns afresh, after a server changes. Returns the facts forgotten.
   */
  static async forget(runtime: Runtime, endpoint?: string): Promise<number> {
    const { latest } = await readFacts(runtime);
    const keys = [...latest]
      .filter(([, r]) => endpoint === undefined || r.endpoint === endpoint)
      .map(([k]) => k);
    await runtime.append(
      keys.map((key) => ({ topic: ENDPOINTS_TOPIC.name, key, value: TOMBSTONE, partition: 0 })),
    );
    return keys.length;
  }

  get(endpoint: string, model: string): EndpointFacts {
    return this.endpoints.get(keyOf(endpoint, model)) ?? {};
  }

  /**
   * Adds what was learned, and appends the facts it changes. The append is not awaited by the
   * call that learned it: a fact lost to a failing log costs one refused request or ramp after a
   * restart, never a reply; `written()` waits for it.
   */
  learn(endpoint: string, model: string, learned: EndpointFacts): void {
    const key = keyOf(endpoint, model);
    const before = this.endpoints.get(key) ?? {};
    const after = merged(before, learned);
    const beforeFacts = new Map(factsOf(before).map(([fact, v]) => [fact, JSON.stringify(v)]));
    const changed = factsOf(after).filter(([fact, v]) => beforeFacts.get(fact) !== JSON.stringify(v));
    if (changed.length === 0) return;
    this.endpoints.set(key, after);
    const runtime = this.runtime;
    if (!runtime) return;
    const records: OutgoingRecord[] = changed.map(([fact, facts]) => ({
      topic: ENDPOINTS_TOPIC.name,
      key: `${key} ${fact}`,
      value: JSON.stringify({ endpoint, model, facts } satisfies EndpointFactRecord),
      partition: 0,
    }));
    this.writing = this.writing
      .then(() => runtime.append(records))
      .catch((err: Error) => this.onWriteError(err));
  }

  /** Every fact learned so far is on the log (or its append failed and was reported). */
  written(): Promise<void> {
    return this.writing;
  }
}

/**
 * The topic's latest fact per key (a tombstone removes its key). A record that is no fact (another
 * layout, no key, put there by hand) is skipped and counted: what it said is learned again.
 */
async function readFacts(
  runtime: Runtime,
): Promise<{ latest: Map<string, EndpointFactRecord>; unreadable: number }> {
  const latest = new Map<string, EndpointFactRecord>();
  let unreadable = 0;
  const [end = 0] = await runtime.endOffsets(ENDPOINTS_TOPIC.name);
  for (let from = 0; from < end; ) {
    const records = await runtime.read(ENDPOINTS_TOPIC.name, 0, from, 1000);
    if (records.length === 0) break;
    for (const r of records) {
      if (r.key !== null && r.value === TOMBSTONE) {
        latest.delete(r.key);
        continue;
      }
      const parsed = r.key === null ? null : EndpointFactRecord.safeParse(parseJson(r.value));
      if (parsed?.success) latest.set(r.key!, parsed.data);
      else unreadable++;
    }
    from = records[records.length - 1]!.offset + 1;
  }
  return { latest, unreadable };
}
