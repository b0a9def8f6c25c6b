import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { openRuntime } from '../../topology/runtime/open.js';
import { readAll } from '../conformance/suite.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, start } from '../llm-server/server.js';
import { cli, runUntilIdle, syntheticArticles, workspace } from './helpers.js';

/** The server the kill runs talk to: latency long enough that calls are in flight at a kill. */
export function startKillServer(): Promise<LlmServer> {
  return start({ responder: pipelineResponder, latency: { kind: 'lognormal', medianMs: 60, p99Ms: 400 } });
}

/**
 * kill -9 of `run --until-idle` at random moments, then a run to the end: zero repeated calls for
 * replies that had arrived (counted at the server), zero duplicate QA ids downstream, and every
 * candidate graded exactly once; on the embedded log, or on `log` (a kafka:// URL).
 */
export async function expectExactlyOnceAfterKills(
  server: LlmServer,
  kills: number,
  log?: string,
): Promise<void> {
  // On Kafka, an app of its own: no topic or group of another run is in the way.
  const app = `kill-${randomBytes(4).toString('hex')}`;
  const ws = workspace(server.url, { ...SLOW, ...(log ? { log, app } : {}) });
  const produced = cli(['produce', 'articles', '--key', 'id', '--config', ws.config], syntheticArticles(80));
  expect(produced.status, produced.stderr).toBe(0);
  server.resetStats();
  let landed = 0;
  // A run that finishes before its kill lands is fine; keep killing until `kills` have landed.
  for (let tries = 0; landed < kills && tries < 2 * kills; tries++) {
    const run = await runUntilIdle(ws.config, { killAfterRunningMs: Math.floor(Math.random() * 1000) });
    if (run.signal === 'SIGKILL') landed++;
    else expect(run.code, run.stderr).toBe(0);
  }
  expect(landed).toBe(kills);
  const last = await runUntilIdle(ws.config);
  expect(last.code, last.stderr).toBe(0);

  const runtime = await openRuntime(log ?? `file:${ws.dir}/log`, { app });
  try {
    // A reply arrives when the client reads it, and it is journaled that moment: a journaled reply
    // is found by every later run until the step that used it commits its tombstone, so no key
    // is journaled twice. (Compaction at each run's start removes a reply with its tombstone, and
    // a reply journaled twice hides its first copy: the server's count below is the stronger check.)
    const records = await readAll(runtime, 'llm.journal');
    const journal = records.filter((r) => r.value !== null).map((r) => r.key);
    expect(journal.length).toBeGreaterThan(0);
    expect(new Set(journal).size).toBe(journal.length);
    // Once the last run is done, every reply still in the journal has its tombstone after it:
    // nothing is pending, so a restart restores nothing.
    const settled = new Set(records.filter((r) => r.value === null).map((r) => r.key));
    expect(journal.filter((k) => !settled.has(k))).toEqual([]);
    // The server sees a second request only for replies it wrote that the killed process had not
    // read yet: no more than the calls in flight at each kill.
    const repeated = Object.values(server.stats().answeredByPromptHash).filter((n) => n > 1).length;
    expect(repeated).toBeLessThanOrEqual(landed * IN_FLIGHT);
    process.stdout.write(
      `kills: ${landed} landed; replies lost in transit to a kill: ${repeated}; journaled: ${journal.length}\n`,
    );
    const ids = async (topic: string) =>
      (await readAll(runtime, topic)).map(
        (r) =>
          (r.value as { id?: string; candidate?: { id: string } }).candidate?.id ??
          (r.value as { id: string }).id,
      );
    const candidates = await ids('qa.candidates');
    const graded = await ids('qa.graded');
    // A candidate delivered to grade again is rejected as a duplicate of itself (grade's id
    // check): such a repeat must name a candidate that was graded (absorbed, not lost), and is
    // not an outcome.
    const rejections = (await readAll(runtime, 'qa.rejected')).map(
      (r) => r.value as { candidate: { id: string }; grade: { duplicateOf?: string } },
    );
    const isRepeat = (g: (typeof rejections)[number]) => g.grade.duplicateOf === g.candidate.id;
    const repeats = rejections.filter(isRepeat).map((g) => g.candidate.id);
    const rejected = rejections.filter((g) => !isRepeat(g)).map((g) => g.candidate.id);
    const classified = await ids('qa.classified');
    expect(candidates.length).toBeGreaterThan(20);
    expect(new Set(candidates).size).toBe(candidates.length);
    expect(new Set(classified).size).toBe(classified.length);
    // Every candidate is graded exactly once: accepted or rejected (or dead-lettered, counted below).
    const gradedOnce = [...graded, ...rejected];
    expect(new Set(gradedOnce).size).toBe(gradedOnce.length);
    const dead = (await readAll(runtime, 'dlq')).filter(
      (r) => (r.value as { processor: string }).processor === 'grade',
    ).length;
    for (const id of repeats) expect(gradedOnce).toContain(id);
    if (repeats.length)
      process.stdout.write(`candidates delivered to grade twice, absorbed: ${repeats.length}\n`);
    expect(gradedOnce.length + dead).toBe(candidates.length);
    expect(classified.sort()).toEqual(graded.sort());
  } finally {
    await runtime.close();
  }
}

// Most calls one run has in flight, what a kill can cut off between the server's write and the
// read: three articles in extract (a relevance call, then two generation calls each), three in
// grade, three in classify.
const IN_FLIGHT = 3 * 2 + 3 + 3;
/** A few inputs in flight per stage, so a run lasts long enough to be killed in the middle. */
const SLOW = {
  processors: { extract: { concurrency: 3 }, grade: { concurrency: 3 }, classify: { concurrency: 3 } },
};
