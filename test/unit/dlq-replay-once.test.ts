import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DLQ_REPLAYED_TOPIC, replayOnce } from '../../processors/dlq-replay.js';
import { pipelineTopology } from '../../processors/pipeline.js';
import type { DeadLetter } from '../../schemas/dead-letter.js';
import { EmbeddedRuntime } from '../../topology/runtime/embedded.js';

// Two `dlq replay` at once on one log (issue 52): each dead letter is re-driven once, whichever
// plans first, on the real SQLite log shared by two connections, as two processes share it. In
// one process the two interleave at every await, so both plan before either appends: before the
// fence, both re-drove every dead letter (40 inputs appended again for 20). Two processes started
// together rarely overlap so (each spends seconds starting up), so they are not the test.

/** The pipeline's topics, as `dlq replay` ensures them; inputs on articles' partition 0. */
const TOPICS = pipelineTopology().topics;
const INPUTS = 'articles';
const DEAD_LETTERS = 20;

const opened: EmbeddedRuntime[] = [];
afterEach(async () => {
  for (const r of opened.splice(0)) await r.close();
});

function open(dir: string): EmbeddedRuntime {
  const runtime = new EmbeddedRuntime(join(dir, 'log.sqlite'));
  opened.push(runtime);
  return runtime;
}

/** A log with DEAD_LETTERS inputs, each refused once: a dead letter pointing at it. */
async function logWithDeadLetters(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'dlq-once-'));
  const runtime = open(dir);
  await runtime.ensureTopics([...TOPICS, DLQ_REPLAYED_TOPIC]);
  const inputs = Array.from({ length: DEAD_LETTERS }, (_, i) => ({
    topic: INPUTS,
    partition: 0,
    key: `in-${i}`,
    value: JSON.stringify({ i }),
  }));
  await runtime.append(inputs);
  const letters = inputs.map(
    (input, i): DeadLetter => ({
      id: `dl-${i}`,
      code: 'llm-request-refused',
      reason: 'refused',
      processor: 'extract',
      origin: { kind: 'record', topic: input.topic, partition: 0, offset: String(i) },
      payload: input.value,
    }),
  );
  await runtime.append(letters.map((dl) => ({ topic: 'dlq', key: dl.id, value: JSON.stringify(dl) })));
  return dir;
}

/** Each dead letter's input appended again, counted: once each is the claim. */
async function reDriven(dir: string): Promise<{ inputs: number; markers: number }> {
  const runtime = open(dir);
  const count = async (name: string) => (await runtime.endOffsets(name))[0] ?? 0;
  return { inputs: (await count(INPUTS)) - DEAD_LETTERS, markers: await count(DLQ_REPLAYED_TOPIC.name) };
}

describe('dlq replay, twice at once', () => {
  it('two concurrent replays over two connections to one log re-drive each dead letter once', async () => {
    const dir = await logWithDeadLetters();
    const [a, b] = await Promise.all([replayOnce(open(dir), {}), replayOnce(open(dir), {})]);
    expect(await reDriven(dir)).toEqual({ inputs: DEAD_LETTERS, markers: DEAD_LETTERS });
    // One replayed them all, the other found them replayed (it planned again after it was fenced).
    const replayed = (p: typeof a) => p.inputs.reduce((n, i) => n + i.deadLetters.length, 0);
    expect([replayed(a), replayed(b)].sort((x, y) => x - y)).toEqual([0, DEAD_LETTERS]);
    expect([a.alreadyReplayed, b.alreadyReplayed].sort((x, y) => x - y)).toEqual([0, DEAD_LETTERS]);
    // And a third, later, finds nothing to do.
    const third = await replayOnce(open(dir), {});
    expect(third.alreadyReplayed).toBe(DEAD_LETTERS);
    expect(await reDriven(dir)).toEqual({ inputs: DEAD_LETTERS, markers: DEAD_LETTERS });
  });
});
