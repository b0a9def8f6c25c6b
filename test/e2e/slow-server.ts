import { fileURLToPath } from 'node:url';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type Stats, start } from '../llm-server/server.js';
import { cli, requestsByOutcome, runUntilIdle, workspace } from './helpers.js';

const SAMPLES = fileURLToPath(new URL('../../examples/articles', import.meta.url));

export interface SlowServerRun {
  seconds: number;
  stats: Stats;
  /** The run summary's requests by outcome ("answered", "timeout", ...). */
  requests: Record<string, number>;
  /** The run summary's line on the adaptive limit. */
  concurrency: string;
}

/**
 * One sample article through `run --until-idle --max-articles 1` against the test server with
 * `slots` decoding slots at `replyMs` a reply, with a user's minimal config (baseUrl, model, key)
 * and `timeoutMs` where given: what a new user with a slow server sees. `statesSlots`: the server
 * says its slots at GET /props, so the limit starts there (the baseline a found limit is held to).
 */
export async function oneArticle(opts: {
  slots: number;
  replyMs: number;
  statesSlots?: boolean;
  timeoutMs?: number;
}): Promise<SlowServerRun> {
  return (await articleRuns({ ...opts, runs: 1 }))[0]!;
}

/**
 * `runs` such runs one after another on the same data folder, an article each: the runs after the
 * first start from what the first learned of the server (llm.endpoints), as a restarted or a second
 * worker does.
 */
export async function articleRuns(opts: {
  slots: number;
  replyMs: number;
  runs: number;
  statesSlots?: boolean;
  timeoutMs?: number;
}): Promise<SlowServerRun[]> {
  const server = await start({
    responder: pipelineResponder,
    slots: opts.slots,
    statesSlots: opts.statesSlots ?? false,
    latency: { kind: 'fixed', ms: opts.replyMs },
  });
  try {
    // The minimal config: the helpers' workspace without its retry settings.
    const { config } = workspace(server.url, {
      llm: {
        baseUrl: server.url,
        model: 'test-model',
        apiKeyEnv: 'E2E_LLM_KEY',
        ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}),
      },
    });
    const ingest = cli(['ingest', SAMPLES, '--config', config]);
    if (ingest.status !== 0) throw new Error(`ingest exited ${ingest.status}:\n${ingest.stderr}`);
    const runs: SlowServerRun[] = [];
    for (let i = 0; i < opts.runs; i++) {
      server.resetStats();
      const run = await runUntilIdle(config, { extraArgs: ['--max-articles', '1'] });
      if (run.code !== 0) throw new Error(`run exited ${run.code}:\n${run.stderr}`);
      runs.push({
        seconds: run.seconds,
        stats: server.stats(),
        requests: requestsByOutcome(run.stdout),
        concurrency: /LLM concurrency.*/.exec(run.stdout)?.[0] ?? '',
      });
    }
    return runs;
  } finally {
    await server.stop();
  }
}
