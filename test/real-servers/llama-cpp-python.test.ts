import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { type CompletionRequest, Llm, LlmReplyError } from '../../llm/index.js';
import { MCQ_PROMPT, McqReply, mcqMessages } from '../../llm/prompts/mcq.js';
import { RELEVANCE_PROMPT, RelevanceReply, relevanceMessages } from '../../llm/prompts/relevance.js';
import type { DeadLetter } from '../../schemas/dead-letter.js';
import type { LlmCallRecord } from '../../schemas/llm.js';
import { LlmConfig } from '../../schemas/llm.js';
import { cli, requestsByOutcome, runUntilIdle, topicValues } from '../e2e/helpers.js';
import { LOCAL_MODEL } from '../setup/model.js';

/**
 * A real server users run: llama-cpp-python's OpenAI-compatible server (PyPI sdist, built once by
 * deploy/llama-cpp-python.sh and cached under .deploy/) serving the local GGUF. The layer learns its
 * dialect (response_format `{type: "json_object", schema}`, `max_tokens`) from what it refuses, and
 * every reply is read and bounded.
 */

const DEPLOY = fileURLToPath(new URL('../../deploy/llama-cpp-python.sh', import.meta.url));
const modelPath = process.env.BIOALCHEMY_LOCAL_MODEL ?? LOCAL_MODEL;
const MAX_TOKENS = 200;
/**
 * Three short passages: enough that several requests are in flight at once (a passage's stages fan
 * out), few enough for the time a reply takes here. The server samples each token under the reply
 * schema's grammar over Gemma's 262k-token vocabulary, on one thread (its default: half of 2
 * cores), so a reply takes 10-60 s and an article of four sections about 25 replies.
 */
const SHORT_ARTICLE = fileURLToPath(new URL('../fixtures/real-server/rotifer.txt', import.meta.url));

const PASSAGE =
  'Tardigrades survive complete desiccation by accumulating the disaccharide trehalose and intrinsically ' +
  'disordered proteins that vitrify the cytoplasm; after rehydration their mitochondria resume oxidative ' +
  'phosphorylation within minutes and DNA repair enzymes restore damaged strands.';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

describe('a real llama-cpp-python server through llm.baseUrl', () => {
  let server: ChildProcess;
  let baseUrl: string;
  let serverLog = '';

  beforeAll(async () => {
    const built = spawnSync('bash', [DEPLOY], { encoding: 'utf8', stdio: ['ignore', 'pipe', 2] });
    if (built.status !== 0) throw new Error(`deploy/llama-cpp-python.sh failed: ${built.status}`);
    const python = built.stdout.trim().split('\n').at(-1)!;
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}/v1`;
    // As users start it: its defaults (interrupt_requests on, half the cores for threads), the
    // context of a real deployment. --chat_format gemma: without it the server wraps Gemma's turns
    // in [INST] markers.
    server = spawn(
      python,
      ['-m', 'llama_cpp.server', '--model', modelPath, '--chat_format', 'gemma', '--n_ctx', '8192'],
      { env: { ...process.env, HOST: '127.0.0.1', PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    // However this process ends (a runner's timeout kills it), the server goes with it.
    process.once('exit', () => server.kill('SIGKILL'));
    server.stdout!.on('data', (c: Buffer) => (serverLog += c));
    server.stderr!.on('data', (c: Buffer) => (serverLog += c));
    const deadline = Date.now() + 120_000;
    for (;;) {
      const up = await fetch(`${baseUrl}/models`).then(
        (r) => r.ok,
        () => false,
      );
      if (up) break;
      if (server.exitCode !== null || Date.now() > deadline)
        throw new Error(`llama-cpp-python server did not start:\n${serverLog.slice(-4000)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }, 900_000);

  afterAll(() => {
    server?.kill('SIGTERM');
  });

  it('answers relevance and MCQ prompts: its dialect learned once, every reply read, none past its budget', async () => {
    const logs: { level: number; msg: string }[] = [];
    const records: { outputTokens: number; repair: boolean }[] = [];
    const llm = new Llm(
      LlmConfig.parse({
        baseUrl,
        model: 'gemma-3-270m',
        apiKeyEnv: 'LLAMA_CPP_KEY',
        maxTokens: MAX_TOKENS,
        contextTokens: 2048,
        concurrency: 1,
      }),
      {
        env: { LLAMA_CPP_KEY: 'none' },
        log: pino({ level: 'info' }, { write: (line: string) => logs.push(JSON.parse(line)) }),
        onCall: (r) => records.push(r),
      },
    );
    try {
      const outcomes: string[] = [];
      const asks: CompletionRequest<z.ZodType>[] = [
        {
          stage: 'relevance' as const,
          messages: relevanceMessages('Tardigrade desiccation', PASSAGE),
          schema: RelevanceReply,
          promptVersion: RELEVANCE_PROMPT,
        },
        {
          stage: 'mcq' as const,
          messages: mcqMessages('Tardigrade desiccation', PASSAGE),
          schema: McqReply,
          promptVersion: MCQ_PROMPT,
        },
      ];
      for (const ask of asks) {
        try {
          await llm.complete(ask);
          outcomes.push('ok');
        } catch (e) {
          // The 270M model may write a reply the schema refuses; a reply, read, is what is tested.
          if (!(e instanceof LlmReplyError)) throw e;
          outcomes.push(`invalid: ${e.reason}`);
        }
      }
      process.stdout.write(
        `llama-cpp-python: ${JSON.stringify(outcomes)}, output tokens ${JSON.stringify(records.map((r) => r.outputTokens))}\n`,
      );
      // Learned once: json_schema refused, {type: json_object, schema} sent from then on.
      expect(logs.filter((l) => /response_format json_schema refused/.test(l.msg))).toHaveLength(1);
      // No other refusal: every request after it was answered.
      expect(logs.filter((l) => l.level >= 40 && !/response_format/.test(l.msg)).map((l) => l.msg)).toEqual(
        [],
      );
      expect(records.length).toBeGreaterThanOrEqual(2);
      for (const r of records) expect(r.outputTokens).toBeLessThanOrEqual(MAX_TOKENS);
      // A short reply parses whole under the grammar the server makes of the schema. (The 270M
      // model's questions may run past the budget: read, and refused as cut off, not unbounded.)
      expect(outcomes[0]).toBe('ok');
    } finally {
      await llm.close();
    }
  }, 600_000);

  /** `ingest` of `input` and `run --until-idle --max-articles N` with this LLM config; what it made. */
  async function pipeline(llm: Record<string, unknown>, articles: number, input: string) {
    const dir = mkdtempSync(join(tmpdir(), 'bioalchemy-llama-cpp-'));
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({ log: `file:${join(dir, 'log')}`, clickhouse: `chdb:${join(dir, 'chdb')}`, llm }),
    );
    const ingest = cli(['ingest', input, '--config', config]);
    expect(ingest.status, ingest.stderr).toBe(0);
    const run = await runUntilIdle(config, { extraArgs: ['--max-articles', String(articles)] });
    expect(run.code, run.stderr).toBe(0);
    process.stdout.write(
      `${run.stdout
        .split('\n')
        .filter((l) => /^LLM/.test(l))
        .join('\n')}\n`,
    );
    const dlq = await topicValues<DeadLetter>(dir, 'dlq');
    const byCode: Record<string, number> = {};
    for (const d of dlq) byCode[d.code] = (byCode[d.code] ?? 0) + 1;
    return {
      candidates: (await topicValues(dir, 'qa.candidates')).length,
      graded: (await topicValues(dir, 'qa.graded')).length,
      rejected: (await topicValues(dir, 'qa.rejected')).length,
      deadLetters: byCode,
      calls: (await topicValues<LlmCallRecord>(dir, 'llm.calls')).filter((c) => !c.cached),
      /** The run summary's requests sent, by outcome. */
      requests: requestsByOutcome(run.stdout),
    };
  }

  it('runs the pipeline over a short article with the minimal config and a reply budget (no concurrency): no request timed out, none refused, no cut taken for a reply; reported beside the local provider', async () => {
    const articles = 1;
    // The minimal config (the server's one decoding slot and its dialect are found), with one key
    // more: the reply budget the local provider run has too. The 270M model fills a reply's
    // strings to the schema's maxLength (which this server's grammar keeps to) and an MCQ reply
    // runs to the default 1,024 tokens; each token costs 0.1-0.5 s here under the grammar, so one
    // such reply took 5-10 minutes. Cuts do not depend on the budget: the server cuts a stream when
    // another request arrives, whatever its length.
    const served = await pipeline(
      { baseUrl, model: 'gemma-3-270m', apiKeyEnv: 'E2E_LLM_KEY', maxTokens: MAX_TOKENS },
      articles,
      SHORT_ARTICLE,
    );
    const local = await pipeline(
      { provider: 'local', modelPath, maxTokens: MAX_TOKENS },
      articles,
      SHORT_ARTICLE,
    );
    for (const [name, o] of [
      ['llama-cpp-python', served],
      ['local provider', local],
    ] as const)
      process.stdout.write(
        `pipeline via ${name}, ${articles} article: candidates ${o.candidates}, graded ${o.graded}, rejected ${o.rejected}, dead letters ${JSON.stringify(o.deadLetters)}, calls ${o.calls.length}, output tokens max ${Math.max(0, ...o.calls.map((c) => c.outputTokens))}\n`,
      );
    expect(served.calls.length).toBeGreaterThan(0);
    expect(served.deadLetters['llm-request-refused'] ?? 0).toBe(0);
    // Every request sent was answered, but the 500 that teaches response_format (once) and the
    // streams the server cut for a request arriving (its interrupt_requests) until the layer sends it
    // one at a time (after two, and those then in flight): none timed out waiting its turn at the
    // server's one slot, none was sent again into its queue, no cut was taken for a reply.
    const expected = ['answered', 'http 500', 'cut'];
    expect(Object.keys(served.requests).filter((o) => !expected.includes(o))).toEqual([]);
    expect(served.requests['http 500'] ?? 0).toBeLessThanOrEqual(1);
    expect(served.requests.cut ?? 0).toBeLessThan(served.requests.answered ?? 0);
  }, 1_800_000);
});
