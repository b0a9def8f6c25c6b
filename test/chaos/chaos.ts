import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openClickHouse } from '../../analytics/clickhouse.js';
import { topicCounts, viewTopicCounts } from '../../analytics/qa-store.js';
import { copiesOf } from '../../processors/sampler/selection.js';
import type { DeadLetter } from '../../schemas/dead-letter.js';
import type { QaWithdrawal } from '../../schemas/dedup.js';
import type { MixState } from '../../schemas/mix-state.js';
import type { ClassifiedQa, GradedQa, QaCandidate } from '../../schemas/qa.js';
import { loadTaxonomy } from '../../schemas/taxonomy.js';
import { openRuntime } from '../../topology/runtime/open.js';
import { readAll } from '../conformance/suite.js';
import { BIN, cli, cliAsync, keptQa, runUntilIdle, syntheticArticles, workspace } from '../e2e/helpers.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { seededFrom, sha256 } from '../llm-server/random.js';
import { type LlmServer, type Responder, start } from '../llm-server/server.js';
import { clickHouseServer } from '../services/clickhouse-server.js';

// The whole pipeline under the faults real deployments see, checked from its outputs alone:
// `run` (every processor, the feeder serving) killed with SIGKILL at random moments, the
// ClickHouse server restarted once (and the broker, on Kafka), 20% mixed LLM faults, and a trainer
// leasing and acking throughout, itself killed twice. Then a run to the end and a final epoch.

export interface ChaosOptions {
  /** The config's `log`: file:… for the embedded runtime (made per run), or a kafka:// URL. */
  readonly log: 'embedded' | string;
  readonly articles: number;
  /**
   * Of the articles, how many are later twins of earlier ones: the same abstract under another id,
   * published earlier, produced last. Their questions come before the twin's already accepted ones
   * in dedupOrder, so the join withdraws those: the run exercises qa.withdrawn on purpose.
   */
  readonly twins: number;
  readonly kills: number;
  /** Restart the Kafka broker once, halfway (Kafka runs only). */
  readonly restartBroker?: boolean;
  readonly print?: (line: string) => void;
}

export interface ChaosReport {
  readonly articles: number;
  readonly lost: number;
  readonly duplicated: number;
  /** The classified QA less those withdrawn: the dataset every reader sees. */
  readonly classified: number;
  readonly deadLetters: number;
  readonly withdrawals: {
    readonly count: number;
    /** QA withdrawn by more than one record. */
    readonly repeated: number;
    /** Withdrawn QA that the join had not accepted (absent from qa.graded). */
    readonly notAccepted: number;
    /** Withdrawn QA that the final epoch, planned after every withdrawal, delivered. */
    readonly servedAfter: number;
    /** Withdrawn QA that ClickHouse does not know as withdrawn, or knows and the log does not. */
    readonly clickHouseDiffers: number;
  };
  readonly countsMatch: boolean;
  readonly deliveredAsSelected: boolean;
  readonly finalEpoch: number;
  readonly selectedCopies: number;
  readonly killTimesMs: number[];
  readonly trainerKills: number;
  readonly restarts: string[];
  readonly llm: { requests: number; faults: number; units: number; paidTwice: number; allowedTwice: number };
  readonly ackedBatches: number;
  /**
   * Acks the trainer sent and got no answer to, by what asking again found ('already-acked': the
   * first went in, 'acked': it had not), and the longest time from one to the nearest kill of a run.
   */
  readonly unansweredAcks: { count: number; retried: Record<string, number>; msFromKill: number | null };
  readonly seconds: number;
}

const ROOT = new URL('../../', import.meta.url).pathname;

/** Most replies one killed run can have in flight (lost in transit to its kill): see SLOW. */
const IN_FLIGHT = 3 * 2 + 3 + 3;
const SLOW = {
  processors: { extract: { concurrency: 3 }, grade: { concurrency: 3 }, classify: { concurrency: 3 } },
};

export async function runChaos(opts: ChaosOptions): Promise<ChaosReport> {
  const started = performance.now();
  const print = opts.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const llm = await start({
    responder: titleBlindResponder,
    seed: 11,
    latency: { kind: 'lognormal', medianMs: 20, p99Ms: 200 },
    faults: {
      rate: 0.2,
      kinds: ['rate-limit', 'server-error', 'timeout', 'reset', 'truncated', 'schema-break'],
      retryAfterSeconds: 0,
    },
  });
  const server = clickHouseServer();
  const db = await server.freshDatabase('chaos');
  const clickhouse = db.url;
  const port = 18_700 + Math.floor(Math.random() * 200);
  const app = `chaos-${randomBytes(4).toString('hex')}`;
  // A reference over every category the test model labels, so the mix serves all of them, and
  // rare topics repeated: the final epoch then has copies to count.
  const categories = loadTaxonomy().categories.map((c) => c.id);
  const referenceFile = join(tmpdir(), `chaos-reference-${randomBytes(4).toString('hex')}.json`);
  writeFileSync(
    referenceFile,
    JSON.stringify({
      name: 'chaos',
      total: null,
      categories: Object.fromEntries(categories.map((c, i) => [c, { count: 1000 * (i + 1) }])),
    }),
  );
  const ws = workspace(llm.url, {
    ...SLOW,
    ...(opts.log === 'embedded' ? {} : { log: opts.log, app }),
    sampler: { reference: referenceFile, repeatCap: 2 },
    clickhouse,
    llm: {
      baseUrl: llm.url,
      apiKeyEnv: 'E2E_LLM_KEY',
      model: 'test-model',
      timeoutMs: 2000,
      retry: { baseDelayMs: 5, maxDelayMs: 50, maxAttempts: 8 },
    },
    feeder: { leaseMs: 2000, batchSize: 16, state: join(tmpdir(), `${app}-feeder.sqlite`) },
  });
  const restarts: string[] = [];
  const killTimesMs: number[] = [];
  /** When each killed run was seen gone (Date.now()). */
  const killedAt: number[] = [];
  const acks = join(ws.dir, 'acks.jsonl');
  let trainer: ChildProcess | null = null;
  let serving: ChildProcess | null = null;
  let trainerKills = 0;
  try {
    const produced = cli(
      ['produce', 'articles', '--key', 'id', '--config', ws.config],
      chaosArticles(opts.articles, opts.twins),
    );
    if (produced.status !== 0) throw new Error(`produce: ${produced.stderr}`);
    llm.resetStats();
    trainer = startTrainer(port, acks);

    // The chaos: each run serves the feeder and is killed at a random moment.
    for (let k = 0; k < opts.kills; k++) {
      const after = 200 + Math.floor(Math.random() * 2500);
      const run = cliAsync(['run', '--no-dashboard', '--port', String(port), '--config', ws.config], {
        killAfterRunningMs: after,
      });
      if (k === Math.floor(opts.kills / 3)) {
        await restartClickHouse();
        restarts.push(`clickhouse during run ${k + 1}`);
      }
      if (opts.restartBroker && k === Math.floor(opts.kills / 2)) {
        restartService('kafka');
        restarts.push(`kafka broker during run ${k + 1}`);
      }
      const result = await run;
      if (result.signal !== 'SIGKILL')
        throw new Error(`run ${k + 1} ended by itself (${result.code}): ${result.stderr.slice(-2000)}`);
      killTimesMs.push(after);
      killedAt.push(Date.now());
      if (k === Math.floor(opts.kills / 4) || k === Math.floor((3 * opts.kills) / 4)) {
        trainer.kill('SIGKILL');
        trainerKills++;
        trainer = startTrainer(port, acks);
      }
    }
    trainer.kill('SIGKILL');
    trainer = null;
    print(
      `chaos: ${killTimesMs.length} runs killed at ${killTimesMs.join(', ')} ms after start; trainer killed ${trainerKills} times; ${restarts.join('; ')}`,
    );

    // To the end: every article through every stage, the last mix made.
    const drain = await runUntilIdle(ws.config);
    if (drain.code !== 0) throw new Error(`the draining run failed: ${drain.stderr.slice(-2000)}`);
    print(`drained: ${drain.stdout}`);

    const runtime = await openLog(opts, ws.dir, app);
    let mixes: MixState[];
    try {
      mixes = (await readAll(runtime, 'mix.state')).map((r) => r.value as MixState);
    } finally {
      await runtime.close();
    }
    const final = mixes.at(-1);
    if (!final) throw new Error('no mix was made');

    // A whole epoch at the final mix: the feeder serves, the trainer leases until it has one.
    const child = spawn(
      process.execPath,
      [BIN, 'run', '--no-dashboard', '--port', String(port), '--config', ws.config],
      {
        env: { ...process.env, E2E_LLM_KEY: 'test-key', BIOALCHEMY_LOG_LEVEL: 'warn' },
        stdio: 'ignore',
      },
    );
    serving = child;
    const servingExit = new Promise((resolve) => child.on('exit', resolve));
    trainer = spawnTrainer(port, acks, final.version);
    const done = await lineFrom(trainer, /^done (\d+)$/m, 240_000);
    trainer = null;
    const finalEpoch = Number(done[1]);
    print(`the trainer acked a whole epoch (${finalEpoch}) at the final mix version ${final.version}`);
    child.kill('SIGTERM');
    await servingExit;
    serving = null;

    return await verify({
      ws,
      app,
      opts,
      final,
      finalEpoch,
      llm,
      acks,
      clickhouse,
      killTimesMs,
      killedAt,
      trainerKills,
      restarts,
      started,
    });
  } finally {
    trainer?.kill('SIGKILL');
    serving?.kill('SIGKILL');
    await llm.stop();
    await db.dispose().catch(() => {});
    await server.close();
  }
}

async function verify(args: {
  ws: { dir: string };
  app: string;
  opts: ChaosOptions;
  final: MixState;
  finalEpoch: number;
  llm: LlmServer;
  acks: string;
  clickhouse: string;
  killTimesMs: number[];
  killedAt: number[];
  trainerKills: number;
  restarts: string[];
  started: number;
}): Promise<ChaosReport> {
  const { opts, final, finalEpoch } = args;
  const runtime = await openLog(opts, args.ws.dir, args.app);
  let articles: string[];
  const articleAt = new Map<string, string>();
  let candidates: QaCandidate[];
  let classified: ClassifiedQa[];
  let graded: GradedQa[];
  let withdrawn: QaWithdrawal[];
  let dead: DeadLetter[];
  let batches: {
    id: string;
    epoch: number;
    mixVersion: number;
    items: { qaId: string }[];
  }[];
  try {
    const records = await readAll(runtime, 'articles');
    articles = records.map((r) => (r.value as { id: string }).id);
    for (const r of records) articleAt.set(`${r.partition}:${r.offset}`, (r.value as { id: string }).id);
    candidates = (await readAll(runtime, 'qa.candidates')).map((r) => r.value as QaCandidate);
    classified = (await readAll(runtime, 'qa.classified')).map((r) => r.value as ClassifiedQa);
    graded = (await readAll(runtime, 'qa.graded')).map((r) => r.value as GradedQa);
    withdrawn = (await readAll(runtime, 'qa.withdrawn')).map((r) => r.value as QaWithdrawal);
    dead = (await readAll(runtime, 'dlq')).map((r) => r.value as DeadLetter);
    batches = (await readAll(runtime, 'rollout.batches')).map((r) => r.value as (typeof batches)[number]);
  } finally {
    await runtime.close();
  }

  // Lost: an article with neither a question nor a dead letter about its record.
  const answered = new Set(candidates.map((c) => c.articleId));
  for (const d of dead) {
    const o = d.origin;
    if (o.kind === 'record' && o.topic === 'articles')
      answered.add(articleAt.get(`${o.partition}:${o.offset}`) ?? '');
  }
  const lost = articles.filter((a) => !answered.has(a)).length;
  const ids = classified.map((q) => q.candidate.id);
  const duplicated = ids.length - new Set(ids).size;
  // The dataset as every reader sees it (the sampler, the feeder, ClickHouse, export).
  const dataset = keptQa(classified, withdrawn);
  const withdrawnIds = new Set(withdrawn.map((w) => w.qaId));
  const acceptedIds = new Set(graded.map((g) => g.candidate.id));

  // ClickHouse counts equal the distinct QA per topic.
  const expected = new Map<string, Set<string>>();
  for (const q of dataset)
    for (const l of q.classification.labels)
      expected.set(l.category, (expected.get(l.category) ?? new Set()).add(q.candidate.id));
  const want = [...expected]
    .map(([category, s]) => ({ category, n: s.size }))
    .sort((a, b) => a.category.localeCompare(b.category));
  const a = await openClickHouse(args.clickhouse);
  let countsMatch: boolean;
  let clickHouseWithdrawn: Set<string>;
  try {
    countsMatch =
      JSON.stringify(await topicCounts(a)) === JSON.stringify(want) &&
      JSON.stringify(await viewTopicCounts(a)) === JSON.stringify(want);
    const rows = await a.client.query({
      query: 'SELECT DISTINCT id FROM qa_withdrawn',
      format: 'JSONEachRow',
    });
    clickHouseWithdrawn = new Set(((await rows.json()) as { id: string }[]).map((r) => r.id));
  } finally {
    await a.close();
  }

  // The final epoch delivered each selected item as many times as the mix copies it.
  const copies = new Map<string, number>();
  for (const q of dataset) {
    const n = copiesOf(final, {
      id: q.candidate.id,
      topics: [...new Set(q.classification.labels.map((l) => l.category))],
      source: q.candidate.provenance.source,
      published: q.candidate.provenance.published,
    });
    if (n > 0) copies.set(q.candidate.id, n);
  }
  // What the trainer acked in the final epoch (it was not killed then, so its file is whole);
  // each batch once, however often it was leased.
  const delivered = new Map<string, number>();
  const seen = new Set<string>();
  const acked = existsSync(args.acks)
    ? readFileSync(args.acks, 'utf8')
        .split('\n')
        .filter((l) => l.includes('"batchId"'))
        .map((l) => JSON.parse(l) as { batchId: string; epoch: number; items: string[] })
    : [];
  for (const b of acked) {
    if (b.epoch !== finalEpoch || seen.has(b.batchId)) continue;
    seen.add(b.batchId);
    for (const id of b.items) delivered.set(id, (delivered.get(id) ?? 0) + 1);
  }
  // Every batch the feeder published for that epoch is one the trainer acked.
  const published = new Set(batches.filter((b) => b.epoch === finalEpoch).map((b) => b.id));
  const publishedAcked = [...published].every((id) => seen.has(id));
  const deliveredAsSelected =
    publishedAcked &&
    delivered.size === copies.size &&
    [...copies].every(([id, n]) => delivered.get(id) === n);
  const selectedCopies = [...copies.values()].reduce((s, n) => s + n, 0);

  // The withdrawal path: once per QA, only of an accepted one, out of the final epoch (planned
  // after the drain saw every withdrawal) and out of ClickHouse's counts.
  const withdrawals = {
    count: withdrawnIds.size,
    repeated: withdrawn.length - withdrawnIds.size,
    notAccepted: [...withdrawnIds].filter((id) => !acceptedIds.has(id)).length,
    servedAfter: [...withdrawnIds].filter((id) => delivered.has(id)).length,
    clickHouseDiffers:
      [...withdrawnIds].filter((id) => !clickHouseWithdrawn.has(id)).length +
      [...clickHouseWithdrawn].filter((id) => !withdrawnIds.has(id)).length,
  };

  // LLM calls: a reply paid twice only when a kill cut it off in transit.
  const stats = args.llm.stats();
  const paidTwice = Object.values(stats.answeredByPromptHash).filter((n) => n > 1).length;
  const ackedBatches = existsSync(args.acks)
    ? readFileSync(args.acks, 'utf8')
        .split('\n')
        .filter((l) => l.includes('"batchId"')).length
    : 0;
  const unanswered = existsSync(args.acks)
    ? readFileSync(args.acks, 'utf8')
        .split('\n')
        .filter((l) => l.includes('"unanswered"'))
        .map((l) => JSON.parse(l) as { failedAt: number; retried: string })
    : [];
  const retried: Record<string, number> = {};
  for (const u of unanswered) retried[u.retried] = (retried[u.retried] ?? 0) + 1;
  const fromKill = unanswered.map((u) => Math.min(...args.killedAt.map((k) => Math.abs(u.failedAt - k))));
  return {
    articles: articles.length,
    lost,
    duplicated,
    classified: dataset.length,
    deadLetters: dead.length,
    withdrawals,
    countsMatch,
    deliveredAsSelected,
    finalEpoch,
    selectedCopies,
    killTimesMs: args.killTimesMs,
    trainerKills: args.trainerKills,
    restarts: args.restarts,
    llm: {
      requests: stats.requests,
      faults: Object.values(stats.byFault).reduce((s, n) => s + (n ?? 0), 0),
      units: Object.keys(stats.answeredByPromptHash).length,
      paidTwice,
      allowedTwice: args.killTimesMs.length * IN_FLIGHT,
    },
    ackedBatches,
    unansweredAcks: {
      count: unanswered.length,
      retried,
      msFromKill: fromKill.length ? Math.max(...fromKill) : null,
    },
    seconds: (performance.now() - args.started) / 1000,
  };
}

export function formatReport(r: ChaosReport): string {
  return [
    `lost=${r.lost} duplicated=${r.duplicated}`,
    `articles ${r.articles}, classified QA ${r.classified} (less withdrawn), dead letters ${r.deadLetters}`,
    `withdrawn ${r.withdrawals.count}: written twice ${r.withdrawals.repeated}, not accepted ${r.withdrawals.notAccepted}, served in the final epoch ${r.withdrawals.servedAfter}, differing in ClickHouse ${r.withdrawals.clickHouseDiffers}`,
    `ClickHouse counts equal the distinct QA per topic: ${r.countsMatch}`,
    `final epoch ${r.finalEpoch} delivered each selected item as often as the mix copies it (${r.selectedCopies} copies): ${r.deliveredAsSelected}`,
    `kills: ${r.killTimesMs.length} runs (at ${r.killTimesMs.join(', ')} ms), trainer ${r.trainerKills}; restarts: ${r.restarts.join('; ')}`,
    `LLM: ${r.llm.requests} requests, ${r.llm.faults} faults, ${r.llm.units} replies, ${r.llm.paidTwice} paid twice (at most ${r.llm.allowedTwice}: in flight at a kill)`,
    `trainer acked ${r.ackedBatches} batches; ${r.seconds.toFixed(0)} s`,
    `acks without an answer: ${r.unansweredAcks.count} (asked again: ${JSON.stringify(r.unansweredAcks.retried)}), each at most ${r.unansweredAcks.msFromKill ?? '-'} ms from a run's kill`,
  ].join('\n');
}

/**
 * The pipeline's replies to the prompt less the article's title: twins (one abstract,
 * two titles) then ask the same questions and get the same verdicts, as one model would give.
 */
const titleBlindResponder: Responder = (request, context) => {
  const messages = request.messages.map((m) =>
    typeof m.content === 'string' ? { ...m, content: m.content.replace(/Title: [^\n]*\n/, '') } : m,
  );
  const random = seededFrom(sha256(JSON.stringify(messages)));
  return pipelineResponder({ ...request, messages }, { ...context, random });
};

/** The chaos run's checks hold: nothing lost or twice, counts and the final epoch right, withdrawals exercised and right. */
export function chaosPassed(r: ChaosReport): boolean {
  const w = r.withdrawals;
  return (
    r.lost === 0 &&
    r.duplicated === 0 &&
    r.countsMatch &&
    r.deliveredAsSelected &&
    r.llm.paidTwice <= r.llm.allowedTwice &&
    w.count > 0 &&
    w.repeated === 0 &&
    w.notAccepted === 0 &&
    w.servedAfter === 0 &&
    w.clickHouseDiffers === 0
  );
}

/**
 * `articles` synthetic articles, the last `twins` of them twins of the first: the same abstract
 * under another id, published earlier (2021 against 2024). Produced last, a twin's questions reach
 * the band owners after the first article's were accepted, and come before them in dedupOrder.
 */
export function chaosArticles(articles: number, twins: number): string {
  if (twins < 0 || 2 * twins > articles) throw new Error(`twins ${twins} of ${articles} articles`);
  const lines = syntheticArticles(articles - twins)
    .trimEnd()
    .split('\n');
  for (let i = 0; i < twins; i++) {
    const first = JSON.parse(lines[i]!) as Record<string, unknown>;
    lines.push(
      JSON.stringify({
        ...first,
        id: `doi:10.5555/synthetic-twin.${i}`,
        doi: `10.5555/synthetic-twin.${i}`,
        title: `An earlier twin of ${String(first.title)}`,
        published: '2021-06',
        contentHash: `synthetic-twin-${i}`,
      }),
    );
  }
  return `${lines.join('\n')}\n`;
}

function openLog(opts: ChaosOptions, dir: string, app: string) {
  return opts.log === 'embedded' ? openRuntime(`file:${dir}/log`) : openRuntime(opts.log, { app });
}

function spawnTrainer(port: number, out: string, finalVersion?: number): ChildProcess {
  return spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(ROOT, 'test/chaos/trainer.ts'),
      '--url',
      `http://127.0.0.1:${port}`,
      '--out',
      out,
      ...(finalVersion === undefined ? [] : ['--final-version', String(finalVersion)]),
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
}

function startTrainer(port: number, out: string): ChildProcess {
  const child = spawnTrainer(port, out);
  child.on('exit', (code, signal) => {
    if (signal !== 'SIGKILL') process.stderr.write(`chaos trainer exited on its own (${code})\n`);
  });
  return child;
}

/** Resolves with the match once `pattern` appears on the child's stdout; rejects at the deadline. */
function lineFrom(child: ChildProcess, pattern: RegExp, deadlineMs: number): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let seen = '';
    let errors = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(`no ${pattern} from the trainer within ${deadlineMs} ms: ${seen}${errors.slice(-2000)}`),
      );
    }, deadlineMs);
    child.stderr?.on('data', (c: Buffer) => {
      errors += c;
    });
    child.stdout?.on('data', (c: Buffer) => {
      seen += c;
      const m = seen.match(pattern);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      const m = seen.match(pattern);
      if (m) resolve(m);
      else reject(new Error(`the trainer exited (${code}) before ${pattern}: ${errors.slice(-2000)}`));
    });
  });
}

function restartService(name: 'kafka' | 'clickhouse'): void {
  for (const action of ['down', 'up']) {
    const r = spawnSync('bash', [join(ROOT, 'deploy/services.sh'), action, name], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`services.sh ${action} ${name}: ${r.stderr}`);
  }
}

/** Stops and starts the ClickHouse server; the run in flight meets it down. */
async function restartClickHouse(): Promise<void> {
  await new Promise((r) => setTimeout(r, 300));
  restartService('clickhouse');
}
