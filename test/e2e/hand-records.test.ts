import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, onTestFinished } from 'vitest';
import { pipelineTopology } from '../../processors/pipeline.js';
import type { OutgoingRecord } from '../../topology/records.js';
import { openRuntime } from '../../topology/runtime/open.js';
import {
  type BadKind,
  bigNotJson,
  deadLetters,
  expectCaughtUp,
  expectGoodFlowed,
  expectNoProcessorFailure,
  expectRefused,
  GOOD,
  hugeArticle,
  hugeWrongSchema,
  marker,
  midRunServerForSuite,
  notJson,
  READERS,
  UNREAD,
  wrongSchema,
} from './hand-records.js';
import { cli, runUntilIdle, summaryCounts, workspace } from './helpers.js';

/**
 * Records produced by hand to every topic of the pipeline on the embedded log (through the
 * runtime's append, which takes any text: the log itself checks nothing), before and during a
 * `run --until-idle`: values of the wrong schema, values that are not JSON, a 1 MB and a 10 MB
 * value, null keys. Each bad record on a topic a processor reads ends as one dead letter per
 * reader, with a reason naming the schema's failing field or "not JSON" and the value cut to
 * 64 KiB; on the topics nothing reads (qa.rejected, rollout.batches, dlq, llm.journal) it stays
 * where it is and disturbs nothing. The run exits 0, idle, with every group committed past every
 * record, and the valid records produced beside the bad ones come out of their stages.
 *
 * 10 MB: the embedded log has no record size limit (the sources' own limit is 50 MB a record), so
 * a 10 MB value is taken like any other: a valid 10 MB article is processed (extract sends its
 * first `extract.maxPassages` passages), a 10 MB value of the wrong schema is a dead letter.
 */
describe('records produced by hand to each topic (embedded)', () => {
  const hooked = midRunServerForSuite();

  it('dead-letters every bad record with its reason, never stalls, and lets the good ones through', async () => {
    const ws = workspace(hooked().server.url);
    // A hundred megabytes of log: gone with the test.
    onTestFinished(() => rmSync(ws.dir, { recursive: true, force: true }));
    const log = `file:${ws.dir}/log`;
    const bad = (topic: string): (OutgoingRecord & { kind: BadKind })[] => [
      { kind: 'wrong-schema', topic, key: `hand-wrong-${topic}`, value: wrongSchema(topic) },
      // Null keys: on the compacted topics (mix.state, llm.journal) too, which the embedded log takes.
      { kind: 'not-json', topic, key: null, value: notJson(topic) },
      { kind: 'big', topic, key: 'hand-big', value: bigNotJson(topic) },
      { kind: 'huge', topic, key: 'hand-huge', value: hugeWrongSchema(topic) },
    ];
    const readTopics = Object.keys(READERS);
    const runtime = await openRuntime(log);
    try {
      await runtime.ensureTopics(pipelineTopology().topics);
      const [keyed, nullKey] = GOOD.articles;
      const [candidateKeyed, candidateNullKey] = GOOD.candidates;
      // Good and bad interleaved in each topic, so a bad record sits between good ones.
      await runtime.append([
        { topic: 'articles', key: keyed!.id, value: JSON.stringify(keyed) },
        { topic: 'qa.candidates', key: candidateKeyed!.id, value: JSON.stringify(candidateKeyed) },
        ...[...readTopics, ...UNREAD].flatMap(bad),
        { topic: 'articles', key: null, value: JSON.stringify(nullKey) },
        { topic: 'qa.candidates', key: null, value: JSON.stringify(candidateNullKey) },
        { topic: 'qa.graded', key: null, value: JSON.stringify(GOOD.graded) },
        { topic: 'qa.classified', key: GOOD.classified.candidate.id, value: JSON.stringify(GOOD.classified) },
      ]);
    } finally {
      await runtime.close();
    }
    // A valid 10 MB article through the produce CLI: validated and appended like any other.
    const huge = hugeArticle();
    const produced = cli(
      ['produce', 'articles', '--key', 'id', '--config', ws.config],
      `${JSON.stringify(huge)}\n`,
    );
    expect(produced.status, produced.stderr).toBe(0);

    // While the run is under way: more bad records, on dlq too (the run's summary reads the dead
    // letters written since it started, so it meets these), and a good article beside them.
    const midRun = { ...GOOD.articles[0]!, id: 'hand:article-mid-run', contentHash: 'hand-mid-run' };
    hooked().atFirstCall(async () => {
      const live = await openRuntime(log);
      try {
        await live.append([
          { topic: 'dlq', key: null, value: notJson('dlq', 2) },
          { topic: 'dlq', key: 'x', value: wrongSchema('dlq', 2) },
          { topic: 'articles', key: null, value: notJson('articles', 2) },
          { topic: 'articles', key: midRun.id, value: JSON.stringify(midRun) },
          { topic: 'articles', key: 'y', value: wrongSchema('articles', 2) },
        ]);
      } finally {
        await live.close();
      }
    });

    const started = performance.now();
    const run = await runUntilIdle(ws.config);
    const seconds = (performance.now() - started) / 1000;
    expect(run.code, run.stderr).toBe(0);
    expect(hooked().called()).toBe(true);
    expect(run.stdout).toMatch(/^dead letters by code:/m);
    // The summary counts the hand-made records on dlq as what they are, not as a crash.
    expect(run.stdout).toMatch(/not-a-dead-letter.*: not a dead letter/);
    process.stdout.write(`hand records (embedded): run --until-idle took ${seconds.toFixed(1)} s\n`);
    const after = await openRuntime(log);
    try {
      const dead = await deadLetters(after);
      for (const topic of readTopics)
        for (const kind of ['wrong-schema', 'not-json', 'big', 'huge'] as const)
          expectRefused(dead, topic, kind);
      expectRefused(dead, 'articles', 'not-json', 2);
      expectRefused(dead, 'articles', 'wrong-schema', 2);
      // Nothing reads these topics: nothing refused their records, and they did not get in the way.
      for (const topic of UNREAD) expect(dead.filter((d) => d.origin.topic === topic)).toEqual([]);
      expect(dead.filter((d) => d.payload.includes(marker('huge', 'articles')))[0]!.reason).toMatch(
        /^invalid input: articles: id: /,
      );
      expectNoProcessorFailure(dead);
      await expectCaughtUp(after);
      await expectGoodFlowed(after, [...GOOD.articles.map((a) => a.id), midRun.id, huge.id]);

      // The 10 MB records are kept out of the log's records b-tree (INLINE_MAX_CHARS in
      // topology/runtime/embedded.ts): SQLite compares an overflowing key of that WITHOUT ROWID
      // table by reading all of it, so inline they made every poll that met one read megabytes
      // (20 to 70 ms a round of empty polls here, against about 1 ms; `npm run bench -- embedded`
      // measures the log's speed). Checked on the file, not by the clock.
      const file = new Database(join(ws.dir, 'log', 'log.sqlite'), { readonly: true });
      try {
        const inline = file.prepare('SELECT max(length(value)) AS n FROM records').get() as { n: number };
        const apart = file
          .prepare('SELECT count(*) AS n FROM large_values WHERE length(value) > 5000000')
          .get() as { n: number };
        expect(inline.n).toBeLessThanOrEqual(64 * 1024);
        expect(apart.n).toBeGreaterThan(0);
      } finally {
        file.close();
      }
    } finally {
      await after.close();
    }
    // Idle means done: a second run finds nothing to read and refuses nothing again.
    const again = await runUntilIdle(ws.config);
    expect(again.code, again.stderr).toBe(0);
    const counts = summaryCounts(again.stdout);
    for (const p of Object.values(READERS).flat()) expect(counts[p]?.in, p).toBe(0);
    expect(again.stdout).toMatch(/^dead letters by code: none$/m);
  }, 180_000);
});
