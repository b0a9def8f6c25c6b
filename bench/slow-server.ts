import { articleRuns, oneArticle, type SlowServerRun } from '../test/e2e/slow-server.js';

/**
 * A new user's first run against a slow server (issue 49): one sample article, `run --until-idle
 * --max-articles 1` with the minimal config (baseUrl, model, key: the default 120 s timeout and
 * 64 calls in flight as the bound), against the test server with 1 and 4 decoding slots at
 * BIOALCHEMY_BENCH_SLOW_MS a reply (default 20,000). Each beside the same server stating its slots
 * at GET /props, where the limit starts and stays at the slots: the feeding a found limit is
 * held to (at most 1.25x its time on 1 slot, at least 0.9 of its throughput on 4).
 */
export async function run(): Promise<string[]> {
  const replyMs = Number(process.env.BIOALCHEMY_BENCH_SLOW_MS ?? 20_000);
  const lines: string[] = [];
  const describe = (r: SlowServerRun) =>
    `${r.seconds.toFixed(0)} s; requests ${JSON.stringify(r.requests)}; serial time of the replies ${(r.stats.latencySumMs / 1000).toFixed(0)} s; decoded for nobody ${r.stats.decodedForNobody}; most waiting for a slot ${r.stats.maxWaiting}; ${r.concurrency.replace(/^LLM concurrency, \S+ /, '')}`;
  for (const slots of [1, 4]) {
    const found = await oneArticle({ slots, replyMs });
    const fed = await oneArticle({ slots, replyMs, statesSlots: true });
    lines.push(
      `${slots} slot${slots > 1 ? 's' : ''} at ${replyMs / 1000} s a reply, minimal config: ${describe(found)}`,
      `  the same server stating its slots: ${describe(fed)}`,
      `  time found / time fed at the slots: ${(found.seconds / fed.seconds).toFixed(2)}x (target ${slots === 1 ? '<= 1.25x' : '<= 1.11x, i.e. >= 0.9 of the throughput'})`,
    );
  }
  // A second article on the same data folder, as a restarted or a second worker runs it: the
  // limit found by the first is read from llm.endpoints, so no ramp from 1 is paid again.
  const [first, second] = await articleRuns({ slots: 4, replyMs, runs: 2 });
  const [fedFirst, fedSecond] = await articleRuns({ slots: 4, replyMs, runs: 2, statesSlots: true });
  lines.push(
    `4 slots, two articles one after the other on one data folder: found ${describe(first!)}`,
    `  then ${describe(second!)}`,
    `  the same server stating its slots: ${fedFirst!.seconds.toFixed(0)} s, then ${fedSecond!.seconds.toFixed(0)} s`,
    `  the second article, time found / time fed at the slots: ${(second!.seconds / fedSecond!.seconds).toFixed(2)}x (target <= 1.11x)`,
  );
  return lines;
}
