import { expect } from 'vitest';
import type { Analytics } from '../../analytics/clickhouse.js';
import { mixHistory } from '../../analytics/mix-store.js';
import { topicCounts, viewTopicCounts } from '../../analytics/qa-store.js';
import type { MixState } from '../../schemas/mix-state.js';
import { openRuntime } from '../../topology/runtime/open.js';
import { readAll } from '../conformance/suite.js';
import { classifiedOf, distinctPerTopic } from '../sampler/classified.js';
import { generateItems } from '../sampler/generated.js';
import { cli, runUntilIdle, workspace } from './helpers.js';

/**
 * Classified QA straight into qa.classified, then `run --until-idle` killed with SIGKILL at
 * random moments while the count sink writes to ClickHouse in small batches, then a run to the
 * end: ClickHouse's counts (qa FINAL and the topic_counts view) equal the distinct QA items per
 * topic, and the sampler's last mix covers every item. `open` reads ClickHouse once the runs are over.
 */
export async function expectCountsExactAfterKills(opts: {
  readonly clickhouse: string;
  readonly open: () => Promise<Analytics>;
  readonly kills: number;
}): Promise<void> {
  // No LLM call is made: nothing reaches the LLM stages. The URL only satisfies the config.
  const ws = workspace('http://127.0.0.1:9/v1', {
    clickhouse: opts.clickhouse,
    processors: { 'count-sink': { batchSize: 25 }, sampler: { batchSize: 200 } },
  });
  const items = generateItems(6_000, 5);
  const lines = items.map((it, i) => JSON.stringify(classifiedOf(it, i))).join('\n');
  const produced = cli(['produce', 'qa.classified', '--config', ws.config], lines);
  expect(produced.status, produced.stderr).toBe(0);

  let landed = 0;
  // Where the count sink stood at each kill: some kill must land with part of the input written.
  const committedAtKill: number[] = [];
  // A kill before the count sink's first commit proves little: on a loaded machine the first
  // steps come later, so each such kill pushes the next one later (the kills stay random).
  const partial = (n: number) => n > 0 && n < items.length;
  let laterMs = 0;
  for (
    let tries = 0;
    (landed < opts.kills || !committedAtKill.some(partial)) && tries < 4 * opts.kills;
    tries++
  ) {
    const run = await runUntilIdle(ws.config, {
      killAfterRunningMs: laterMs + 100 + Math.floor(Math.random() * 600),
    });
    if (run.signal === 'SIGKILL') {
      landed++;
      const committed = await committedBy(ws.dir, 'count-sink');
      committedAtKill.push(committed);
      if (committed === 0) laterMs = Math.max(500, 2 * laterMs);
    } else expect(run.code, run.stderr).toBe(0);
  }
  expect(landed).toBeGreaterThanOrEqual(opts.kills);
  expect(committedAtKill.some(partial), `count sink at kills: ${committedAtKill}`).toBe(true);
  const last = await runUntilIdle(ws.config);
  expect(last.code, last.stderr).toBe(0);

  const expected = distinctPerTopic(items);
  const a = await opts.open();
  let history: MixState[];
  try {
    expect(await topicCounts(a)).toEqual(expected);
    expect(await viewTopicCounts(a)).toEqual(expected);
    history = await mixHistory(a);
  } finally {
    await a.close();
  }
  const runtime = await openRuntime(`file:${ws.dir}/log`);
  try {
    const mixes = (await readAll(runtime, 'mix.state')).map((r) => r.value as MixState);
    const final = mixes.at(-1)!;
    expect(final.metrics.items).toBe(items.length);
    // Versions only grow, each once in the log; ClickHouse holds each version the log has.
    const versions = mixes.map((m) => m.version);
    expect(versions).toEqual([...versions].sort((x, y) => x - y));
    expect(new Set(versions).size).toBe(versions.length);
    expect(history.at(-1)!.version).toBe(final.version);
    expect(history.at(-1)).toEqual(final);
    process.stdout.write(
      `count sink: ${landed} kills landed at ${committedAtKill.join(', ')} records committed; ${items.length} items; ${final.version} mix versions; final size ${final.metrics.size}, TVD to target ${final.metrics.tvdTarget.toFixed(4)}\n`,
    );
  } finally {
    await runtime.close();
  }
}

/** Records of qa.classified a processor has committed, over all partitions. */
async function committedBy(dir: string, processor: string): Promise<number> {
  const runtime = await openRuntime(`file:${dir}/log`);
  try {
    const offsets = await runtime.committedOffsets(processor, ['qa.classified']);
    return [...offsets.values()].reduce((s, n) => s + n, 0);
  } finally {
    await runtime.close();
  }
}
