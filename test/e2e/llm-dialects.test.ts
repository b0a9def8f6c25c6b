import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeadLetter } from '../../schemas/dead-letter.js';
import type { EndpointFactRecord, LlmCallRecord, LlmJournalReply } from '../../schemas/llm.js';
import { DIALECTS, type DialectName } from '../llm-server/dialects.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, type Stats, start } from '../llm-server/server.js';
import { ingestAndRun, requestsByOutcome, topicValues, workspace } from './helpers.js';

/**
 * The pipeline over the fixture articles against the servers users run, each answering as its
 * documentation says (test/llm-server/dialects.ts), with nothing in the config but the endpoint, the
 * model and the key (and, where said, a declared context or a server field): each gives classified
 * QA near the plain server's, no dead letter from the reply's shape or a refused parameter, and a
 * refusal is a dead letter of its own with no repair paid.
 */

interface Outcome {
  classified: number;
  deadLetters: Record<string, number>;
  reasons: DeadLetter[];
  /** Requests that asked to fix a reply (an assistant turn in the conversation). */
  repairs: number;
  stats: Stats;
  /** Tokens paid (input + output, thinking included) per classified QA. */
  tokensPerQa: number;
  reasoningTokens: number;
}

describe('the pipeline against the LLM servers users run', () => {
  let server: LlmServer;
  let repairs = 0;
  const outcomes = new Map<string, Outcome>();

  beforeAll(async () => {
    server = await start({
      responder: (request, context) => {
        if (request.messages.some((m) => m.role === 'assistant')) repairs++;
        return pipelineResponder(request, context);
      },
    });
  });
  afterAll(async () => {
    await server.stop();
    // The numbers BENCHMARKS.md quotes, one line a mode.
    for (const [mode, o] of outcomes)
      process.stdout.write(
        `llm-dialects ${mode}: classified ${o.classified}, dead letters ${JSON.stringify(o.deadLetters)}, repairs ${o.repairs}, tokens/QA ${Math.round(o.tokensPerQa)}, reasoning tokens ${o.reasoningTokens}, requests ${o.stats.requests}, refused ${JSON.stringify(o.stats.refusedByDialect)}\n`,
      );
  });

  /** One run of the pipeline over the fixtures against the server speaking `dialect`. */
  async function run(
    mode: string,
    dialect: DialectName,
    llm: Record<string, unknown> = {},
  ): Promise<Outcome> {
    server.setDialect(DIALECTS[dialect]);
    server.resetStats();
    repairs = 0;
    const ws = workspace(server.url, {
      llm: {
        baseUrl: server.url,
        apiKeyEnv: 'E2E_LLM_KEY',
        model: 'test-model',
        retry: { baseDelayMs: 5, maxDelayMs: 50 },
        ...llm,
      },
    });
    await ingestAndRun(ws.config);
    const classified = (await topicValues(ws.dir, 'qa.classified')).length;
    const dlq = await topicValues<DeadLetter>(ws.dir, 'dlq');
    const calls = await topicValues<LlmCallRecord>(ws.dir, 'llm.calls');
    const deadLetters: Record<string, number> = {};
    for (const d of dlq) deadLetters[d.code] = (deadLetters[d.code] ?? 0) + 1;
    const paid = calls.filter((c) => !c.cached);
    const outcome = {
      classified,
      deadLetters,
      reasons: dlq,
      repairs,
      stats: server.stats(),
      tokensPerQa: paid.reduce((n, c) => n + c.inputTokens + c.outputTokens, 0) / Math.max(1, classified),
      reasoningTokens: paid.reduce((n, c) => n + (c.reasoningTokens ?? 0), 0),
    };
    outcomes.set(mode, outcome);
    return outcome;
  }

  /** Dead letters the reply's shape or a refused parameter caused: none may come from a dialect. */
  const shapeFaults = (o: Outcome) =>
    (o.deadLetters['llm-reply-invalid'] ?? 0) + (o.deadLetters['llm-request-refused'] ?? 0);

  let plain: Outcome;
  it('plain: the baseline', async () => {
    plain = await run('plain', 'plain');
    expect(plain.classified).toBeGreaterThan(5);
    expect(shapeFaults(plain)).toBe(0);
  }, 300_000);

  for (const [mode, dialect, llm] of [
    ['vLLM reasoning_content, 1,500 tokens of thinking', 'vllm-reasoning', {}],
    ['vLLM reasoning, 6,000 tokens of thinking', 'vllm-reasoning-long', {}],
    // The other design: a default budget large enough for most thinking (BENCHMARKS.md compares).
    ['vLLM reasoning, 6,000 tokens of thinking, maxTokens 8192', 'vllm-reasoning-long', { maxTokens: 8192 }],
    ['inline <think>', 'inline-think', {}],
    ['an OpenAI reasoning model', 'openai-reasoning', {}],
    ['llama-cpp-python', 'llama-cpp-python', {}],
    ['a declared 2,048-token context', 'context-2048', { contextTokens: 2048 }],
    [
      'vLLM reasoning with thinking turned off (chat_template_kwargs)',
      'vllm-reasoning',
      { requestFields: { chat_template_kwargs: { enable_thinking: false } } },
    ],
    // The body read by what the server sent, whatever was asked (issue 60).
    ['one JSON body to every request, streamed ones included', 'answers-json', {}],
    [
      'events to every request, asked for whole replies (llm.stream false)',
      'answers-events',
      { stream: false },
    ],
    ['one JSON body with data: [DONE] glued after it', 'json-then-done', {}],
  ] as const) {
    it(`${mode}: at least 90% of the plain classified QA, no dead letter from the reply's shape or a refused parameter`, async () => {
      const o = await run(mode, dialect, llm);
      expect(o.classified, JSON.stringify(o.deadLetters)).toBeGreaterThanOrEqual(0.9 * plain.classified);
      expect(shapeFaults(o), JSON.stringify(o.reasons.slice(0, 3))).toBe(0);
      expect(o.repairs).toBe(0);
      // Every reply was bounded by a field the server reads.
      expect(o.stats.unbounded).toBe(0);
    }, 300_000);
  }

  it('thinking costs tokens, and turning it off saves them', () => {
    const on = outcomes.get('vLLM reasoning_content, 1,500 tokens of thinking')!;
    const off = outcomes.get('vLLM reasoning with thinking turned off (chat_template_kwargs)')!;
    expect(on.reasoningTokens).toBeGreaterThan(0);
    expect(off.reasoningTokens).toBe(0);
    expect(on.tokensPerQa).toBeGreaterThan(2 * off.tokensPerQa);
  });

  it('refusals: dead letters of their own code carrying the words, no repair paid', async () => {
    const o = await run('refusal on 10% of replies', 'refusal');
    expect(o.deadLetters['llm-refusal']).toBeGreaterThan(0);
    expect(o.stats.refusals).toBeGreaterThanOrEqual(o.deadLetters['llm-refusal']!);
    for (const d of o.reasons.filter((d) => d.code === 'llm-refusal'))
      expect(d.reason).toMatch(/the model refused: I'm sorry/);
    expect(o.repairs).toBe(0);
    expect(shapeFaults(o)).toBe(0);
  }, 300_000);

  it("an undeclared 2,048-token context: the server's overflow names it, and budgets are fitted to it", async () => {
    const o = await run('an undeclared 2,048-token context', 'context-2048');
    expect(o.classified).toBeGreaterThanOrEqual(0.9 * plain.classified);
    expect(o.deadLetters['llm-context-exceeded'] ?? 0).toBe(0);
    expect(shapeFaults(o)).toBe(0);
    // Refused only until the first overflow was read (the calls already in flight with it).
    expect(o.stats.refusedByDialect['400']).toBeLessThanOrEqual(o.stats.requests / 2);
  }, 300_000);
});

describe("the pipeline against llama-cpp-python's default interrupt_requests (issue 60)", () => {
  it('several passages in flight: the run ends, no cut reply journaled or dead-lettered, the cuts counted, the endpoint learned one at a time and kept', async () => {
    let repairs = 0;
    // One slot, as llama-cpp-python serves one request at a time; replies long enough to be
    // streaming when the next request arrives.
    const server = await start({
      dialect: DIALECTS.interrupt,
      slots: 1,
      latency: { kind: 'fixed', ms: 60 },
      responder: (request, context) => {
        if (request.messages.some((m) => m.role === 'assistant')) repairs++;
        return pipelineResponder(request, context);
      },
    });
    try {
      const ws = workspace(server.url);
      const run = await ingestAndRun(ws.config);
      const stats = server.stats();
      process.stdout.write(
        `llm-dialects interrupt: ${run.seconds.toFixed(1)} s, requests ${stats.requests}, cut ${stats.cut}\n`,
      );
      expect(stats.cut).toBeGreaterThan(0);
      expect(requestsByOutcome(run.stdout).cut).toBe(stats.cut);
      const dlq = await topicValues<DeadLetter>(ws.dir, 'dlq');
      expect(dlq.filter((d) => d.code === 'llm-reply-invalid')).toEqual([]);
      // A cut reply journaled as whole would have been asked to be fixed.
      expect(repairs).toBe(0);
      const journaled = (await topicValues<LlmJournalReply | null>(ws.dir, 'llm.journal')).filter(
        (r) => r !== null,
      );
      expect(journaled.length).toBeGreaterThan(0);
      for (const reply of journaled) expect(() => JSON.parse(reply.content), reply.content).not.toThrow();
      expect((await topicValues(ws.dir, 'qa.classified')).length).toBeGreaterThan(0);
      // Learned once, said once, kept for the next run.
      expect(run.stdout).toMatch(/^LLM concurrency, .*: limit 1 of 1 \(one at a time: /m);
      expect(
        run.stderr.match(/ends the reply it is streaming whenever another request arrives/g),
      ).toHaveLength(1);
      expect(await topicValues<EndpointFactRecord>(ws.dir, 'llm.endpoints')).toContainEqual(
        expect.objectContaining({ facts: { interruptsStreams: true } }),
      );
    } finally {
      await server.stop();
    }
  }, 300_000);
});
