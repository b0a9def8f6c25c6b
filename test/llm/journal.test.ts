import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { JOURNAL_TOPIC, LogJournal } from '../../llm/index.js';
import { type JournalRestore, RecentReplies } from '../../llm/journal/log.js';
import type { LlmJournalReply } from '../../schemas/llm.js';
import { InputScope, inScope } from '../../topology/input-scope.js';
import { EngineMetrics } from '../../topology/metrics.js';
import { EmbeddedRuntime } from '../../topology/runtime/embedded.js';
import { ProcessorTask } from '../../topology/task.js';
import { defineTopology } from '../../topology/topology.js';
import { windowed } from '../../topology/window.js';
import { readAll } from '../conformance/suite.js';
import { start } from '../llm-server/server.js';
import { mcq, rig } from './helpers.js';

const reply = (n: number): LlmJournalReply => ({
  content: `{"answer":${n}}`,
  model: 'test-model',
  usage: { inputTokens: 10, outputTokens: 5 },
  truncated: false,
});

async function journalOn(runtime: EmbeddedRuntime) {
  const restores: JournalRestore[] = [];
  const journal = await LogJournal.open(runtime, { onRestore: (r) => restores.push(r) });
  return { journal, restores };
}

/** Commits a scope's settlement as its step would: its records appended, then its callbacks. */
async function commit(runtime: EmbeddedRuntime, scope: InputScope): Promise<void> {
  const { records, committed } = scope.settlement();
  await runtime.append(records);
  for (const done of committed) done();
}

async function openLog(): Promise<EmbeddedRuntime> {
  const runtime = EmbeddedRuntime.open(':memory:');
  await runtime.ensureTopics([JOURNAL_TOPIC]);
  return runtime;
}

describe('the response journal on the log', () => {
  it("places a reply in its input's partition and reads only the partitions asked for", async () => {
    const runtime = await openLog();
    const { journal } = await journalOn(runtime);
    await inScope(new InputScope(2), () => journal.put('k2', reply(2)));
    await inScope(new InputScope(7), () => journal.put('k7', reply(7)));
    expect((await runtime.read(JOURNAL_TOPIC.name, 2, 0, 10)).map((r) => r.key)).toEqual(['k2']);
    // More input partitions than journal partitions: modulo.
    expect((await runtime.read(JOURNAL_TOPIC.name, 3, 0, 10)).map((r) => r.key)).toEqual(['k7']);

    const reopened = await journalOn(runtime);
    expect(await inScope(new InputScope(2), () => reopened.journal.get('k2'))).toEqual(reply(2));
    expect(reopened.restores.map((r) => r.partition)).toEqual([2]);
    // A reply of a partition this worker does not work on is not restored, nor found from another.
    expect(await inScope(new InputScope(1), () => reopened.journal.get('k7'))).toBeUndefined();
    expect(reopened.restores.map((r) => r.partition)).toEqual([2, 1]);
    await runtime.close();
  });

  it('journals the replies that arrive in one turn of the event loop in one append, each put resolving once it is written', async () => {
    const runtime = await openLog();
    const { journal } = await journalOn(runtime);
    const appends: number[] = [];
    const append = runtime.append.bind(runtime);
    runtime.append = async (records) => {
      appends.push(records.length);
      return append(records);
    };
    const puts = [1, 2, 3].map((n) => inScope(new InputScope(n), () => journal.put(`k${n}`, reply(n))));
    // Not written before the turn ends: a put that resolved would be a reply a kill could lose.
    expect(await runtime.endOffsets(JOURNAL_TOPIC.name)).toEqual([0, 0, 0, 0]);
    await Promise.all(puts);
    expect(appends).toEqual([3]);
    expect(await runtime.endOffsets(JOURNAL_TOPIC.name)).toEqual([0, 1, 1, 1]);
    // A put of the next turn is the next append.
    await inScope(new InputScope(0), () => journal.put('k0', reply(0)));
    expect(appends).toEqual([3, 1]);
    await runtime.close();
  });

  it('holds only replies whose step has not committed: settled ones leave memory and, compacted, the log', async () => {
    const runtime = await openLog();
    const { journal } = await journalOn(runtime);
    const settledScope = new InputScope(0);
    const pendingScope = new InputScope(0);
    for (let i = 0; i < 1000; i++) await inScope(settledScope, () => journal.put(`done-${i}`, reply(i)));
    await inScope(pendingScope, () => journal.put('pending', reply(-1)));
    expect(journal.size).toBe(1001);
    // The committed step's tombstones: one per reply it used, in the reply's partition.
    const { records } = settledScope.settlement();
    expect(records).toHaveLength(1000);
    expect(records.every((r) => r.value === 'null' && r.partition === 0 && r.from === 0)).toBe(true);
    await commit(runtime, settledScope);
    expect(journal.size).toBe(1);

    // A restart: only the pending reply comes back, and after compaction only it is read.
    expect(await runtime.maintain()).toBe(2000);
    const { journal: restarted, restores } = await journalOn(runtime);
    expect(await inScope(new InputScope(0), () => restarted.get('pending'))).toEqual(reply(-1));
    expect(await inScope(new InputScope(0), () => restarted.get('done-1'))).toBeUndefined();
    expect(restores).toEqual([{ partition: 0, replies: 1, unreadable: 0 }]);
    expect((await runtime.read(JOURNAL_TOPIC.name, 0, 0, 10_000)).map((r) => r.key)).toEqual(['pending']);
    await runtime.close();
  });

  it('a reply asked for again after its step committed is a hit, journaled again until the new step commits', async () => {
    const runtime = await openLog();
    const { journal } = await journalOn(runtime);
    const first = new InputScope(1);
    await inScope(first, () => journal.put('k', reply(1)));
    await commit(runtime, first);
    expect(journal.size).toBe(0);

    // The model wrote one question twice: a second input, in a later step, asks the same.
    const second = new InputScope(2);
    expect(await inScope(second, () => journal.get('k'))).toEqual(reply(1));
    expect((await runtime.read(JOURNAL_TOPIC.name, 2, 0, 10)).map((r) => r.key)).toEqual(['k']);
    // Killed before that step committed: the restarted worker finds it in the second's partition.
    const { journal: restarted } = await journalOn(runtime);
    expect(await inScope(new InputScope(2), () => restarted.get('k'))).toEqual(reply(1));
    expect(second.settlement().records).toEqual([
      { topic: JOURNAL_TOPIC.name, key: 'k', value: 'null', partition: 2, from: 2 },
    ]);
    await commit(runtime, second);
    expect(journal.size).toBe(0);
    await runtime.close();
  });

  it('keeps settled replies within a bound of characters, the oldest dropped first', () => {
    const recent = new RecentReplies(30);
    for (const n of [100, 200, 300]) recent.add(`k${n}`, reply(n)); // 14 characters each
    expect(recent.size).toBe(2);
    expect(recent.take('k100')).toBeUndefined();
    expect(recent.take('k300')).toEqual(reply(300));
    recent.add('k400', reply(400));
    recent.add('k500', reply(500));
    expect(recent.take('k200')).toBeUndefined();
    expect(recent.size).toBe(2);
  });

  it('a hit settles with the step that used it: the replay after a kill pays nothing, then the reply goes', async () => {
    const runtime = await openLog();
    const { journal } = await journalOn(runtime);
    await inScope(new InputScope(1), () => journal.put('k', reply(1)));
    // Killed before the step committed: the replayed input finds the reply and settles it.
    const { journal: restarted } = await journalOn(runtime);
    const replay = new InputScope(1);
    expect(await inScope(replay, () => restarted.get('k'))).toEqual(reply(1));
    await commit(runtime, replay);
    expect(restarted.size).toBe(0);
    const after = (await journalOn(runtime)).journal;
    expect(await inScope(new InputScope(1), () => after.get('k'))).toBeUndefined();
    await runtime.close();
  });

  it('skips records of another layout, without a key, and tombstones of unknown keys; counts the unreadable', async () => {
    const runtime = await openLog();
    await runtime.append([
      { topic: JOURNAL_TOPIC.name, key: 'old', value: '{"text":"a reply of an old layout"}', partition: 0 },
      { topic: JOURNAL_TOPIC.name, key: null, value: JSON.stringify(reply(0)), partition: 0 },
      { topic: JOURNAL_TOPIC.name, key: 'garbage', value: 'not json', partition: 0 },
      { topic: JOURNAL_TOPIC.name, key: 'never-journaled', value: 'null', partition: 0 },
      { topic: JOURNAL_TOPIC.name, key: 'good', value: JSON.stringify(reply(5)), partition: 0 },
    ]);
    const { journal, restores } = await journalOn(runtime);
    expect(await inScope(new InputScope(0), () => journal.get('old'))).toBeUndefined();
    expect(await inScope(new InputScope(0), () => journal.get('good'))).toEqual(reply(5));
    expect(restores).toEqual([{ partition: 0, replies: 1, unreadable: 3 }]);
    expect(journal.unreadable).toBe(3);
    await runtime.close();
  });

  it('outside any input (a call by hand) a reply goes where its key hashes, and stays', async () => {
    const runtime = await openLog();
    const { journal } = await journalOn(runtime);
    await journal.put('by-hand', reply(3));
    const { journal: reopened } = await journalOn(runtime);
    expect(await reopened.get('by-hand')).toEqual(reply(3));
    await runtime.close();
  });

  it('a data folder from before the journal had 4 partitions starts: its replies are dropped, not refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'journal-upgrade-'));
    const before = EmbeddedRuntime.open(dir);
    await before.ensureTopics([{ ...JOURNAL_TOPIC, partitions: 1 }]);
    await before.append(
      Array.from({ length: 3 }, (_, i) => ({
        topic: JOURNAL_TOPIC.name,
        key: `old-${i}`,
        value: JSON.stringify(reply(i)),
        partition: 0,
      })),
    );
    await before.close();

    const runtime = EmbeddedRuntime.open(dir);
    await runtime.ensureTopics([JOURNAL_TOPIC]);
    expect(await runtime.endOffsets(JOURNAL_TOPIC.name)).toHaveLength(4);
    // Placed for one partition, the old replies are dropped: each costs at most a call again.
    expect(await runtime.maintain()).toBe(6);
    expect(await readAll(runtime, JOURNAL_TOPIC.name)).toEqual([]);
    const { journal, restores } = await journalOn(runtime);
    expect(await inScope(new InputScope(0), () => journal.get('old-0'))).toBeUndefined();
    expect(restores).toEqual([{ partition: 0, replies: 0, unreadable: 0 }]);
    await inScope(new InputScope(3), () => journal.put('new', reply(9)));
    expect((await runtime.read(JOURNAL_TOPIC.name, 3, 0, 10)).map((r) => r.key)).toEqual(['new']);
    await runtime.close();
  });
});

describe('an input that waited on the same request in flight', () => {
  it("settles the reply too, in the partition it lies in: it leaves memory even if the asker's step never commits", async () => {
    const runtime = await openLog();
    const { journal } = await journalOn(runtime);
    const server = await start({ latency: { kind: 'fixed', ms: 20 } });
    const r = await rig({}, { journal }, server);
    try {
      const asker = new InputScope(0);
      const waiter = new InputScope(1);
      // Both partitions read first: the asker, started first, is the one that sends.
      await inScope(asker, () => journal.get('none'));
      await inScope(waiter, () => journal.get('none'));
      const [asked, waited] = await Promise.all([
        inScope(asker, () => r.llm.complete(mcq(1))),
        inScope(waiter, () => r.llm.complete(mcq(1))),
      ]);
      expect(server.stats().requests).toBe(1);
      expect(waited.value).toEqual(asked.value);
      const [reply] = await readAll(runtime, JOURNAL_TOPIC.name);
      expect(reply?.partition).toBe(0);
      expect(waiter.settlement().records).toEqual([
        { topic: JOURNAL_TOPIC.name, key: reply!.key, value: 'null', partition: 0, from: 1 },
      ]);
      // The asker was fenced: only the waiter's step commits.
      await commit(runtime, waiter);
      expect(journal.size).toBe(0);
      await runtime.maintain();
      expect(await readAll(runtime, JOURNAL_TOPIC.name)).toEqual([]);
    } finally {
      await r.close();
      await server.stop();
      await runtime.close();
    }
  });
});

/**
 * A stage whose every input pays for one reply (journaled at once) and whose odd inputs then fail
 * in finish(), every try, until they are dead-lettered.
 */
function failingOddInputs(journal: () => LogJournal) {
  return windowed<number>({
    name: 'calls',
    reads: ['in'],
    writes: ['out'],
    stores: [],
    window: {
      inFlight: 8,
      async start(input) {
        const { n } = input.value as { n: number };
        await journal().put(`k${n}`, reply(n));
        return n;
      },
      finish(_input, outcome, ctx) {
        if (!outcome.ok) throw outcome.error;
        if (outcome.value % 2 === 1) throw new Error('a reply the stage cannot use');
        ctx.emit('out', String(outcome.value), { n: outcome.value });
      },
    },
  });
}

describe('the step that finishes an input settles its replies, whatever the outcome', () => {
  for (const driven of ['step', 'run'] as const) {
    it(`a dead letter after the retries too (${driven === 'step' ? 'work inside the step' : 'work in flight outside it'})`, async () => {
      const runtime = await openLog();
      let journal: LogJournal | undefined;
      const processor = failingOddInputs(() => journal!);
      const topology = defineTopology({
        topics: [
          { name: 'in', partitions: 2, schema: null },
          { name: 'out', partitions: 2, schema: null },
          { name: 'dlq', schema: 'dead-letter' },
          JOURNAL_TOPIC,
        ],
        processors: [processor],
      });
      await runtime.ensureTopics(topology.topics);
      journal = await LogJournal.open(runtime);
      const task = await new ProcessorTask(runtime, topology, processor, {
        log: pino({ level: 'silent' }),
        metrics: new EngineMetrics(),
        backoffMs: () => 1,
      }).open();
      await runtime.append(
        Array.from({ length: 6 }, (_, n) => ({ topic: 'in', key: `i${n}`, value: JSON.stringify({ n }) })),
      );
      const deadline = Date.now() + 30_000;
      if (driven === 'step') {
        for (let done = 0; done < 6 && Date.now() < deadline; ) done += await task.step(100);
      } else {
        const stop = new AbortController();
        const running = task.run(stop.signal);
        while (task.committedInputs < 6 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
        stop.abort();
        await running;
      }
      await task.close();
      expect(task.committedInputs).toBe(6);
      expect((await readAll(runtime, 'dlq')).map((r) => (r.value as { reason: string }).reason)).toEqual([
        expect.stringMatching(/processor failed 3 times: a reply the stage cannot use/),
        expect.stringMatching(/processor failed 3 times/),
        expect.stringMatching(/processor failed 3 times/),
      ]);
      expect(await readAll(runtime, 'out')).toHaveLength(3);
      // Every reply, the dead-lettered inputs' too, left memory and, compacted, the log.
      expect(journal.size).toBe(0);
      await runtime.maintain();
      expect(await readAll(runtime, JOURNAL_TOPIC.name)).toEqual([]);
      await runtime.close();
    });
  }
});
