import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { JOURNAL_TOPIC, LLM_CALLS_TOPIC } from '../llm/index.js';
import { pipelineTopology } from '../processors/pipeline.js';
import type { Article } from '../schemas/article.js';
import { readPath, walk } from '../sources/read.js';
import { pipelineResponder } from '../test/llm-server/pipeline-responder.js';
import { type LlmServer, start } from '../test/llm-server/server.js';
import { EmbeddedRuntime, MAINTENANCE_SLICE_ROWS } from '../topology/runtime/embedded.js';
import { fmt } from './harness.js';
import { servingAtScale } from './scale-serving.js';

/**
 * The whole pipeline at scale, on the embedded default, through the compiled CLI as a user runs
 * it, against the project's test LLM server at 1 ms:
 *  - the server's own capacity alone (requests/s at the pipeline's concurrency), then the
 *    pipeline's LLM calls/s end to end beside it;
 *  - RSS of the `run` process sampled every 250 ms, and the longest gap between its 5 s progress
 *    lines (a stall shows as a gap);
 *  - `run --until-idle` with nothing to do on the folder with the whole history vs on an empty
 *    folder: time and peak RSS;
 *  - a kill -9 in the middle of a second batch, then the restart: its time to "running" and the
 *    prompts sent twice, beside those a run with no kill sends twice (QA texts articles share);
 *  - serving at that size (bench/scale-serving.ts): the sampler's recompute, the feeder's first
 *    lease and lease+ack latency on the full pool, the dashboard's snapshot;
 *  - the response journal alone: an empty folder vs 100,000 replies of 1.2 KB settled (with
 *    their tombstones, as a long run leaves them) and vs 100,000 pending (none settled: the worst
 *    case a crash could leave, were that many in flight).
 * N (BIOALCHEMY_BENCH_SCALE_ARTICLES, default 1,000) synthetic articles: each a fixture's
 * metadata, a new id, and an abstract of six sentences drawn from all the real abstracts (the
 * fixtures', and those under BIOALCHEMY_BENCH_SCALE_CORPUS when set). BIOALCHEMY_BENCH_SCALE_PROFILE
 * names a folder for a CPU profile of each `run`.
 */
const BIN = new URL('../bin/bioalchemy.js', import.meta.url).pathname;
const FIXTURES = new URL('../test/fixtures/sources/', import.meta.url).pathname;

export async function run(): Promise<string[]> {
  const n = Number(process.env.BIOALCHEMY_BENCH_SCALE_ARTICLES ?? 1000);
  const replies = Number(process.env.BIOALCHEMY_BENCH_SCALE_REPLIES ?? 100_000);
  const server = await start({ responder: pipelineResponder, latency: { kind: 'fixed', ms: 1 } });
  const lines: string[] = [];
  const workspaces: string[] = [];
  const workspace = () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-scale-'));
    workspaces.push(dir);
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        log: `file:${join(dir, 'log')}`,
        clickhouse: `chdb:${join(dir, 'chdb')}`,
        llm: { baseUrl: server.url, apiKeyEnv: 'BENCH_LLM_KEY', model: 'test-model' },
      }),
    );
    return { dir, config };
  };
  try {
    lines.push(...(await compaction()));
    const capacity = await serverCapacity(server.url, 64, 4000);
    lines.push(`test LLM server alone (1 ms, 64 concurrent): ${fmt(capacity)} requests/s`);

    // The whole pipeline on N articles.
    const ws = workspace();
    await appendArticles(ws.dir, await syntheticArticles(n, 0));
    server.resetStats();
    const serverCpu = process.cpuUsage();
    const full = await runCli(ws.config, ['run', '--until-idle']);
    const serverCpuS = (({ user, system }) => (user + system) / 1e6)(process.cpuUsage(serverCpu));
    if (full.code !== 0) throw new Error(`run failed: ${full.stderr.slice(-2000)}`);
    const calls = server.stats().requests;
    const repeatedWithoutKill = Object.values(server.stats().answeredByPromptHash).filter(
      (c) => c > 1,
    ).length;
    const callsPerSecond = calls / full.seconds;
    lines.push(
      `pipeline, ${n} articles: ${calls} LLM calls in ${full.seconds.toFixed(1)} s, ${fmt(callsPerSecond)} calls/s, ` +
        `${(n / full.seconds).toFixed(1)} articles/s; ${(callsPerSecond / capacity).toFixed(2)}x the server's capacity alone`,
    );
    // The pipeline's process is one thread of JavaScript: the CPU it spends per call bounds its
    // calls/s, whatever the server's capacity. chdb's own threads are counted in it too.
    lines.push(
      `  CPU per LLM call: the run process ${((1000 * full.cpuS) / calls).toFixed(2)} ms (${((100 * full.cpuS) / full.seconds).toFixed(0)}% of a core over the run), ` +
        `the server ${((1000 * serverCpuS) / calls).toFixed(2)} ms; alone, the server and its clients took ${(1000 / capacity).toFixed(2)} ms a request`,
    );
    const split = requestSplit(ws.dir);
    lines.push(
      `  model requests: ${fmt(split.sent + split.cached)} (${((split.sent + split.cached) / n).toFixed(2)} an article), ` +
        `${fmt(split.sent)} sent, ${fmt(split.cached)} answered by the journal or a request in flight; ` +
        `${repeatedWithoutKill} prompts sent twice with no kill (classify's, for a question and answer two articles share, asked again after the first's reply was settled)`,
    );
    lines.push(
      `  RSS of run: ${rssLine(full.rss)}; longest gap between progress lines ${full.longestGapS.toFixed(1)} s (beat 5 s)`,
    );
    lines.push(`  ${paceLine(replyPace(ws.dir))}`);

    // BIOALCHEMY_BENCH_SCALE_BASELINE=<a checkout of another commit, built>: its CLI on the same
    // articles, just after, on the same server: what a change did to the whole run.
    const baselineBin = process.env.BIOALCHEMY_BENCH_SCALE_BASELINE;
    if (baselineBin) {
      const other = workspace();
      await appendArticles(other.dir, await syntheticArticles(n, 0));
      const before = await runCli(other.config, ['run', '--until-idle'], {
        bin: join(baselineBin, 'bin/bioalchemy.js'),
      });
      if (before.code !== 0) throw new Error(`the baseline's run failed: ${before.stderr.slice(-2000)}`);
      const again = workspace();
      await appendArticles(again.dir, await syntheticArticles(n, 0));
      const now = await runCli(again.config, ['run', '--until-idle']);
      lines.push(
        `  beside the CLI of ${baselineBin} on the same ${n} articles, run one after the other: it ${before.seconds.toFixed(1)} s, ` +
          `this one ${full.seconds.toFixed(1)} s and again ${now.seconds.toFixed(1)} s (${(Math.max(full.seconds, now.seconds) / before.seconds).toFixed(2)}x at most); ` +
          `its ${paceLine(replyPace(other.dir))}`,
      );
    }

    // Restarts with nothing to do: the whole history vs an empty folder.
    const empty = workspace();
    const restarts = [];
    for (let i = 0; i < 3; i++) {
      restarts.push({
        empty: await runCli(empty.config, ['run', '--until-idle']),
        history: await runCli(ws.config, ['run', '--until-idle']),
      });
    }
    const med = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const emptyS = med(restarts.map((r) => r.empty.seconds));
    const historyS = med(restarts.map((r) => r.history.seconds));
    const emptyRss = med(restarts.map((r) => peak(r.empty.rss)));
    const historyRss = med(restarts.map((r) => peak(r.history.rss)));
    lines.push(
      `run --until-idle, nothing to do (median of 3): empty folder ${emptyS.toFixed(2)} s, peak RSS ${emptyRss.toFixed(0)} MB; ` +
        `after ${n} articles (${calls} replies) ${historyS.toFixed(2)} s (${(historyS / emptyS).toFixed(2)}x), ` +
        `peak RSS ${historyRss.toFixed(0)} MB (${signed(historyRss - emptyRss)} MB)`,
    );

    // Serving at that size, before the leases' records add to the history the restarts measured.
    lines.push(...(await servingAtScale(ws)));

    // kill -9 in the middle of a second batch, then the restart.
    await appendArticles(ws.dir, await syntheticArticles(Math.max(20, Math.floor(n / 2)), 1));
    server.resetStats();
    const killed = await runCli(ws.config, ['run', '--until-idle'], { killAfterRunningMs: 3000 });
    const restart = await runCli(ws.config, ['run', '--until-idle']);
    if (restart.code !== 0) throw new Error(`restart failed: ${restart.stderr.slice(-2000)}`);
    const batch = server.stats();
    const twice = Object.values(batch.answeredByPromptHash).filter((c) => c > 1).length;
    // QA texts two articles share repeat prompts with no kill at all: as pairs of articles, so
    // with the square of the size, this many at the first run's rate.
    const unkilled = Math.round(repeatedWithoutKill * (batch.requests / calls) ** 2);
    lines.push(
      `kill -9 ${killed.signal === 'SIGKILL' ? 'landed' : 'missed (the run ended first)'} mid-batch; restart to "running" ` +
        `${restart.toRunningS.toFixed(2)} s (empty folder ${median(restarts.map((r) => r.empty.toRunningS)).toFixed(2)} s), ` +
        `to idle ${restart.seconds.toFixed(1)} s; prompts sent twice: ${twice}, of which about ${unkilled} expected with no kill ` +
        '(shared QA texts, as above); the rest are replies in transit at the kill',
    );

    lines.push(...(await historyCost(ws, workspace, n, server)));

    // The journal alone: replies appended to a fresh folder, settled or pending.
    for (const settled of [true, false]) {
      const j = workspace();
      await appendReplies(j.dir, replies, settled);
      const measured = [];
      for (let i = 0; i < 3; i++) measured.push(await runCli(j.config, ['run', '--until-idle']));
      const s = median(measured.map((m) => m.seconds));
      const rss = median(measured.map((m) => peak(m.rss)));
      lines.push(
        `run --until-idle after ${replies} journaled replies of 1.2 KB, ${settled ? 'settled (tombstoned)' : 'all pending'}: ` +
          `${s.toFixed(2)} s (${(s / emptyS).toFixed(2)}x empty), peak RSS ${rss.toFixed(0)} MB (${signed(rss - emptyRss)} MB vs empty)`,
      );
    }
    return lines;
  } finally {
    await server.stop();
    for (const dir of workspaces) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * What history costs a batch: the same N/10 new articles run on the folder that holds the whole
 * history (the N articles and the kill test's batch) and on an empty one, each from its "running"
 * line to idle (the restart's reading of its history is measured apart, above). The two runs have
 * the same ramp and the same drain, so what differs is the history alone: the log and the stores
 * grown, the near-duplicate bands full, the sampler's pool. Per article, since a batch drawn from
 * the same sentences finds more of its questions already kept when the history is long, and so
 * makes fewer classify calls; per reply beside it.
 */
async function historyCost(
  ws: { dir: string; config: string },
  workspace: () => { dir: string; config: string },
  n: number,
  server: LlmServer,
): Promise<string[]> {
  const size = Math.max(100, Math.floor(n / 10));
  const articles = await syntheticArticles(size, 2);
  const runBatch = async (on: { dir: string; config: string }) => {
    await appendArticles(on.dir, articles);
    server.resetStats();
    const r = await runCli(on.config, ['run', '--until-idle']);
    if (r.code !== 0) throw new Error(`run failed: ${r.stderr.slice(-2000)}`);
    return { seconds: r.seconds - r.toRunningS, requests: server.stats().requests };
  };
  const alone = await runBatch(workspace());
  const after = await runBatch(ws);
  const perArticle = (b: typeof alone) => (1000 * b.seconds) / size;
  const perReply = (b: typeof alone) => (1000 * b.seconds) / b.requests;
  return [
    `the same ${size} new articles on the folder with the history and on an empty one, "running" to idle: ` +
      `${after.seconds.toFixed(1)} s and ${alone.seconds.toFixed(1)} s; per article ${perArticle(after).toFixed(1)} ms and ` +
      `${perArticle(alone).toFixed(1)} ms (${(perArticle(after) / perArticle(alone)).toFixed(2)}x), per reply ` +
      `${perReply(after).toFixed(2)} ms and ${perReply(alone).toFixed(2)} ms (${(perReply(after) / perReply(alone)).toFixed(2)}x); ` +
      `requests per article ${(after.requests / size).toFixed(2)} and ${(alone.requests / size).toFixed(2)}`,
  ];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const peak = (rss: readonly number[]) => Math.max(0, ...rss);
const signed = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(0)}`;
function rssLine(rss: readonly number[]): string {
  if (!rss.length) return 'not sampled';
  const q = (f: number) => [...rss].sort((a, b) => a - b)[Math.floor(f * (rss.length - 1))]!;
  return `start ${rss[0]!.toFixed(0)} MB, median ${q(0.5).toFixed(0)} MB, peak ${peak(rss).toFixed(0)} MB, end ${rss.at(-1)!.toFixed(0)} MB`;
}

/**
 * The embedded log's compaction: 200,000 records of a compacted topic, every key written twice,
 * removed in slices, with the event loop's longest delay over the pass; beside it, the one-statement
 * DELETE it replaced on 8,000 records (it is quadratic: 200,000 would take hours), which holds the
 * loop for all of its time.
 */
async function compaction(): Promise<string[]> {
  const spec = {
    name: 'c',
    partitions: 1,
    compacted: true,
    retentionMs: null,
    schema: null,
    description: '',
  };
  const fill = async (runtime: EmbeddedRuntime, keys: number) => {
    for (let v = 0; v < 2; v++)
      for (let from = 0; from < keys; from += 5000)
        await runtime.append(
          Array.from({ length: Math.min(5000, keys - from) }, (_, i) => ({
            topic: 'c',
            key: `key-${from + i}`,
            value: JSON.stringify({ reply: 'x'.repeat(200), v }),
          })),
        );
  };
  const sliced = EmbeddedRuntime.open(':memory:');
  await sliced.ensureTopics([spec]);
  await fill(sliced, 100_000);
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  const started = performance.now();
  const removed = await sliced.maintain();
  const seconds = (performance.now() - started) / 1000;
  delay.disable();
  await sliced.close();

  const old = EmbeddedRuntime.open(':memory:');
  await old.ensureTopics([spec]);
  await fill(old, 4000);
  const oldStarted = performance.now();
  const oldRemoved = old.db
    .prepare(
      `DELETE FROM records WHERE topic = ? AND key IS NOT NULL AND offset < (
         SELECT MAX(r2.offset) FROM records r2
         WHERE r2.topic = records.topic AND r2.partition = records.partition AND r2.key = records.key)`,
    )
    .run('c').changes;
  const oldSeconds = (performance.now() - oldStarted) / 1000;
  await old.close();
  return [
    `compaction, 200,000 records (${removed} superseded): ${seconds.toFixed(2)} s in slices of ${MAINTENANCE_SLICE_ROWS} rows, ` +
      `longest event-loop delay ${(delay.max / 1e6).toFixed(1)} ms`,
    `  the one-statement DELETE it replaced, 8,000 records (${oldRemoved} superseded): ${oldSeconds.toFixed(2)} s, the loop held throughout`,
  ];
}

/**
 * Real articles as templates: the fixtures' MEDLINE and JATS files, and every file under
 * BIOALCHEMY_BENCH_SCALE_CORPUS when set (a folder of MEDLINE or JATS XML, such as a PubMed
 * baseline file). Their abstracts' sentences form one pool.
 */
async function templates(): Promise<{ articles: Article[]; sentences: string[] }> {
  const articles: Article[] = [];
  const files = [
    'medline/pubmed-sample.xml',
    'medline/wrapped-export.xml',
    'jats/articleset.xml',
    'jats/soil-metagenome.nxml',
  ].map((f) => join(FIXTURES, f));
  const corpus = process.env.BIOALCHEMY_BENCH_SCALE_CORPUS;
  if (corpus) for await (const f of walk(corpus)) if (/\.n?xml(\.gz)?$/i.test(f)) files.push(f);
  for (const file of files)
    for await (const item of readPath(file))
      if (item.kind === 'article' && item.article.abstract?.trim()) articles.push(item.article);
  const sentences = [...new Set(articles.flatMap((a) => splitSentences(a.abstract ?? '')))];
  if (sentences.length < SENTENCES_PER_ARTICLE * 2)
    throw new Error('too few abstract sentences to draw from');
  return { articles, sentences };
}

const SENTENCES_PER_ARTICLE = 6;
const splitSentences = (text: string) => text.split(/(?<=\.)\s+/).filter((s) => s.length > 20);

/**
 * n articles, each distinct: a template's metadata, a new id, and an abstract of
 * SENTENCES_PER_ARTICLE sentences drawn (seeded) from the whole pool in a random order. Drawn
 * from one template alone, the fixtures' short abstracts gave a few dozen distinct texts, so at
 * scale most requests were journal hits, not calls.
 */
export async function syntheticArticles(n: number, batch: number): Promise<Article[]> {
  const { articles: base, sentences } = await templates();
  let seed = 7919 + batch;
  const random = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  const seen = new Set<string>();
  return Array.from({ length: n }, (_, i) => {
    const t = base[i % base.length]!;
    let abstract: string;
    do {
      const pool = [...sentences];
      const drawn: string[] = [];
      while (drawn.length < SENTENCES_PER_ARTICLE)
        drawn.push(pool.splice(Math.floor(random() * pool.length), 1)[0]!);
      abstract = drawn.join(' ');
    } while (seen.has(abstract));
    seen.add(abstract);
    const pmid = String(90_000_000 + batch * 1_000_000 + i);
    return {
      ...t,
      id: `pmid:${pmid}`,
      pmid,
      doi: null,
      pmcid: null,
      abstract,
      sections: [],
      contentHash: `bench-scale-${batch}-${i}`,
    };
  });
}

/**
 * The wall time per reply over the first and the last tenth of a run's replies (llm.calls, in the
 * order they arrived): a per-call cost that grows with the calls made shows as a last tenth slower
 * than the first.
 */
function replyPace(dir: string): { first: number; last: number } {
  const runtime = EmbeddedRuntime.open(join(dir, 'log'));
  try {
    const at = runtime.db
      .prepare<[string], { at: number }>(
        `SELECT json_extract(value, '$.at') AS at FROM records
         WHERE topic = ? AND json_extract(value, '$.cached') = 0 ORDER BY at`,
      )
      .all(LLM_CALLS_TOPIC.name)
      .map((r) => r.at);
    const tenth = Math.floor(at.length / 10);
    if (tenth < 2) return { first: Number.NaN, last: Number.NaN };
    return {
      first: (at[tenth]! - at[0]!) / tenth,
      last: (at[at.length - 1]! - at[at.length - 1 - tenth]!) / tenth,
    };
  } finally {
    void runtime.close();
  }
}

const paceLine = ({ first, last }: { first: number; last: number }) =>
  `wall time per reply, first tenth of the replies ${first.toFixed(2)} ms, last tenth ${last.toFixed(2)} ms (${(last / first).toFixed(2)}x)`;

/** The run's model requests from llm.calls: answered by the server, and from the journal or a request in flight. */
function requestSplit(dir: string): { sent: number; cached: number } {
  const runtime = EmbeddedRuntime.open(join(dir, 'log'));
  try {
    const row = runtime.db
      .prepare<[string], { sent: number; cached: number }>(
        `SELECT SUM(json_extract(value, '$.cached') = 0) AS sent, SUM(json_extract(value, '$.cached') = 1) AS cached
         FROM records WHERE topic = ?`,
      )
      .get(LLM_CALLS_TOPIC.name);
    return { sent: row?.sent ?? 0, cached: row?.cached ?? 0 };
  } finally {
    void runtime.close();
  }
}

export async function appendArticles(dir: string, articles: readonly Article[]): Promise<void> {
  const runtime = EmbeddedRuntime.open(join(dir, 'log'));
  try {
    await runtime.ensureTopics(pipelineTopology().topics);
    for (let i = 0; i < articles.length; i += 1000)
      await runtime.append(
        articles.slice(i, i + 1000).map((a) => ({ topic: 'articles', key: a.id, value: JSON.stringify(a) })),
      );
  } finally {
    await runtime.close();
  }
}

/** `count` replies of about 1.2 KB over the journal's partitions; `settled`: each with its tombstone. */
async function appendReplies(dir: string, count: number, settled: boolean): Promise<void> {
  const runtime = EmbeddedRuntime.open(join(dir, 'log'));
  const content = JSON.stringify({ questions: [{ question: 'x'.repeat(900), answer: 'A' }] });
  try {
    await runtime.ensureTopics(pipelineTopology().topics);
    for (let i = 0; i < count; i += 5000) {
      const records = [];
      for (let k = i; k < Math.min(count, i + 5000); k++) {
        const key = `bench-${k.toString(16).padStart(60, '0')}`;
        const partition = k % JOURNAL_TOPIC.partitions;
        const reply = {
          content,
          model: 'test-model',
          usage: { inputTokens: 300, outputTokens: 200 },
          truncated: false,
        };
        records.push({ topic: JOURNAL_TOPIC.name, key, value: JSON.stringify(reply), partition });
        if (settled) records.push({ topic: JOURNAL_TOPIC.name, key, value: 'null', partition });
      }
      await runtime.append(records);
    }
  } finally {
    await runtime.close();
  }
}

/** Requests/s the server answers alone, `concurrency` at a time, for about `ms`. */
async function serverCapacity(url: string, concurrency: number, ms: number): Promise<number> {
  const body = JSON.stringify({
    model: 'test-model',
    messages: [
      { role: 'system', content: 'You judge passages.' },
      {
        role: 'user',
        content: `<<<ARTICLE_TEXT\n${'Mitochondria produce adenosine triphosphate. '.repeat(20)}\nARTICLE_TEXT>>>`,
      },
    ],
    response_format: {
      type: 'json_schema',
      json_schema: {
        name: 'relevance',
        schema: { type: 'object', properties: { relevant: { type: 'boolean' }, reason: { type: 'string' } } },
      },
    },
  });
  const until = performance.now() + ms;
  let answered = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        const res = await fetch(`${url}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
          body,
        });
        await res.text();
        if (res.ok) answered++;
      }
    }),
  );
  return answered / ((performance.now() - started) / 1000);
}

interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  seconds: number;
  /** From spawn to the "running" log line. */
  toRunningS: number;
  /** RSS in MB, every 250 ms. */
  rss: number[];
  /** CPU seconds (user + system, every thread) as of the last sample. */
  cpuS: number;
  longestGapS: number;
}

/** A process's CPU seconds so far (user + system) from /proc/<pid>/stat; null once it is gone. */
function cpuSecondsOf(pid: number): number | null {
  try {
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return null;
  }
}
/** USER_HZ: 100 on every Linux this runs on. */
const CLOCK_TICKS = 100;

/** The compiled CLI in a child (as bin/bioalchemy.js starts it), RSS sampled from /proc. */
function runCli(
  config: string,
  args: string[],
  opts: { killAfterRunningMs?: number; bin?: string } = {},
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child: ChildProcess = spawn(
      process.execPath,
      [
        '--max-semi-space-size=64',
        // BIOALCHEMY_BENCH_SCALE_PROFILE=<dir>: a CPU profile of each run, for Chrome's DevTools.
        ...(process.env.BIOALCHEMY_BENCH_SCALE_PROFILE
          ? ['--cpu-prof', '--cpu-prof-dir', process.env.BIOALCHEMY_BENCH_SCALE_PROFILE]
          : []),
        opts.bin ?? BIN,
        ...args,
        '--config',
        config,
      ],
      {
        env: { ...process.env, BENCH_LLM_KEY: 'k', BIOALCHEMY_LOG_LEVEL: 'info', BIOALCHEMY_FROM_SOURCE: '' },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    const rss: number[] = [];
    let cpuS = 0;
    const progress: number[] = [];
    let stderr = '';
    let toRunningS = Number.NaN;
    const sample = setInterval(() => {
      try {
        const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1];
        if (kb) rss.push(Number(kb) / 1024);
        cpuS = cpuSecondsOf(child.pid!) ?? cpuS;
      } catch {
        // Exited between two samples.
      }
    }, 250);
    child.stderr!.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      stderr = (stderr + text).slice(-200_000);
      const now = performance.now();
      if (text.includes('"msg":"progress"')) progress.push(now);
      if (Number.isNaN(toRunningS) && text.includes('"msg":"running"')) {
        toRunningS = (now - started) / 1000;
        if (opts.killAfterRunningMs !== undefined)
          setTimeout(() => child.kill('SIGKILL'), opts.killAfterRunningMs).unref();
      }
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearInterval(sample);
      const ended = performance.now();
      // Between progress lines only: start-up and the last partial interval are no beat.
      let longestGapS = 0;
      for (let i = 1; i < progress.length; i++)
        longestGapS = Math.max(longestGapS, (progress[i]! - progress[i - 1]!) / 1000);
      resolve({
        code,
        signal,
        stderr,
        seconds: (ended - started) / 1000,
        toRunningS,
        rss,
        cpuS,
        longestGapS,
      });
    });
  });
}
