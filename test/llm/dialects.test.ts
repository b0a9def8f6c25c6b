import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { LlmContextError, LlmRefusalError, LlmReplyError } from '../../llm/index.js';
import { promptTokens } from '../../llm/llm.js';
import { relearn } from '../../llm/providers/openai.js';
import { checkReply, cutOffThinking, splitThinking } from '../../llm/reply.js';
import { LlmConfig } from '../../schemas/llm.js';
import { DIALECTS } from '../llm-server/dialects.js';
import { type ChatRequest, schemaResponder } from '../llm-server/server.js';
import { Mcq, mcq, type Rig, rig } from './helpers.js';

/**
 * The servers users run, as their documentation says they answer (test/llm-server/dialects.ts):
 * every one gives a usable reply with nothing in the config but the endpoint and the model.
 */

let r: Rig | undefined;
afterEach(async () => {
  await r?.close();
  r = undefined;
});

/** A rig whose server speaks `dialect` and keeps every request it was sent. */
async function speaking(dialect: keyof typeof DIALECTS, config: Parameters<typeof rig>[0] = {}) {
  const sent: (ChatRequest & Record<string, unknown>)[] = [];
  r = await rig(
    config,
    {},
    {
      dialect: DIALECTS[dialect],
      responder: (request, context) => {
        sent.push(request as ChatRequest & Record<string, unknown>);
        return schemaResponder(request, context);
      },
    },
  );
  return { rig: r, sent };
}

const warnings = (x: Rig) => x.logs.filter((l) => l.level === 40).map((l) => l.msg);

describe('reasoning models', () => {
  it('vLLM reasoning_content: a reply cut off while thinking is asked again with more budget, not repaired, and the budget that worked is where the next call starts', async () => {
    const { rig: x } = await speaking('vllm-reasoning');
    const first = await x.llm.complete(mcq(1));
    expect(Mcq.parse(first.value)).toEqual(first.value);
    // 1,200 to 1,800 tokens of thinking: cut off at 1,024, answered at 8,192.
    expect(x.records.map((c) => [c.repair, c.outputTokens >= 1024])).toEqual([
      [false, true],
      [false, true],
    ]);
    expect(x.records[0]!.outputTokens).toBe(1024);
    expect(x.records[1]!.reasoningTokens).toBeGreaterThan(1000);
    expect(first.usage.outputTokens).toBe(x.records[0]!.outputTokens + x.records[1]!.outputTokens);
    expect(await x.metric('bioalchemy_llm_calls_total', { outcome: 'thinking-cut-off' })).toBe(1);
    expect(await x.metric('bioalchemy_llm_calls_total', { outcome: 'invalid' })).toBe(0);
    expect(await x.metric('bioalchemy_llm_tokens_total', { direction: 'reasoning' })).toBeGreaterThan(1000);

    await x.llm.complete(mcq(2));
    expect(x.records).toHaveLength(3);
    expect(x.server.stats().requests).toBe(3);
  });

  it('vLLM reasoning (newer field), 6,000 tokens of thinking: the budget grows to what it needs', async () => {
    const { rig: x, sent } = await speaking('vllm-reasoning-long');
    const reply = await x.llm.complete(mcq(1));
    expect(Mcq.parse(reply.value)).toEqual(reply.value);
    expect(sent.map((s) => s.max_completion_tokens)).toEqual([1024, 8192]);
    expect(x.records.at(-1)!.reasoningTokens).toBeGreaterThan(4000);
  });

  it('inline <think>: the thinking is stripped before the JSON and counted', async () => {
    const { rig: x } = await speaking('inline-think', { maxTokens: 4096 });
    const reply = await x.llm.complete(mcq(1));
    expect(Mcq.parse(reply.value)).toEqual(reply.value);
    expect(x.records).toHaveLength(1);
    expect(x.records[0]!.reasoningTokens).toBeGreaterThan(1000);
  });

  it('inline <think> cut off (the tag never closed) is asked again with more, not repaired', async () => {
    const { rig: x, sent } = await speaking('inline-think');
    await x.llm.complete(mcq(1));
    expect(sent.map((s) => s.max_completion_tokens)).toEqual([1024, 8192]);
    expect(sent.every((s) => s.messages.length === 2)).toBe(true);
  });

  it('thinking that leaves too little for the whole answer is asked again with more, not repaired', async () => {
    const { rig: x, sent } = await speaking('plain', { maxTokens: 4096 });
    x.server.setDialect({ reasoning: { tokens: 1000, field: 'reasoning_content' } });
    await x.llm.complete(mcq(1));
    // How long the model thinks on this prompt; a budget of one more leaves no room for the answer.
    const thought = x.records[0]!.reasoningTokens!;
    const tight = await rig({ maxTokens: thought + 1 }, {}, x.server);
    try {
      const reply = await tight.llm.complete(mcq(1));
      expect(Mcq.parse(reply.value)).toEqual(reply.value);
      expect(sent.slice(1).map((s) => s.max_completion_tokens)).toEqual([thought + 1, 8 * (thought + 1)]);
      expect(await tight.metric('bioalchemy_llm_calls_total', { outcome: 'invalid' })).toBe(0);
    } finally {
      await tight.close();
    }
  });

  it('one still thinking at maxTokensCap is no reply, without a repair paid', async () => {
    const { rig: x, sent } = await speaking('vllm-reasoning-long', { maxTokensCap: 4096 });
    // 1,024, then the cap.
    const error = await x.llm.complete(mcq(1)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmReplyError);
    expect((error as LlmReplyError).reason).toMatch(
      /cut off at 4096 tokens while the model was still thinking/,
    );
    expect(sent).toHaveLength(2);
  });

  it('an OpenAI reasoning model: temperature and max_tokens refused once, learned for the model, logged once; hidden reasoning counted', async () => {
    const { rig: x, sent } = await speaking('openai-reasoning');
    await Promise.all([1, 2, 3].map((i) => x.llm.complete(mcq(i))));
    // The refused requests never reached the model; every answered one is in the learned dialect.
    expect(sent.every((s) => s.temperature === undefined && s.max_tokens === undefined)).toBe(true);
    expect(x.server.stats().refusedByDialect['400']).toBeGreaterThanOrEqual(2);
    expect(warnings(x).filter((m) => /temperature refused/.test(m))).toHaveLength(1);
    expect(warnings(x).filter((m) => /max_tokens refused/.test(m))).toHaveLength(1);
    expect(x.records.some((c) => (c.reasoningTokens ?? 0) === 1024 && c.outputTokens === 1024)).toBe(true);
    const before = x.server.stats().refusedByDialect['400'];
    await x.llm.complete(mcq(4));
    expect(x.server.stats().refusedByDialect['400']).toBe(before);
  });

  it('temperature null is not sent', async () => {
    const { rig: x, sent } = await speaking('plain', { temperature: null });
    await x.llm.complete(mcq(1));
    expect(sent[0]).not.toHaveProperty('temperature');
    expect(sent[0]).toMatchObject({ max_tokens: 1024, max_completion_tokens: 1024 });
  });
});

describe('refusals', () => {
  it("are their own outcome, carrying the model's words, with no repair paid", async () => {
    const { rig: x } = await speaking('plain');
    x.server.setDialect({ refusalRate: 1 });
    const error = await x.llm.complete(mcq(1)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmRefusalError);
    expect((error as Error).message).toMatch(/the model refused: I'm sorry/);
    expect(x.server.stats().requests).toBe(1);
    expect(await x.metric('bioalchemy_llm_calls_total', { outcome: 'refused' })).toBe(1);
  });
});

describe('dialects of request fields', () => {
  it("llama-cpp-python: json_schema's 500 teaches {type: json_object, schema}; max_tokens bounds its replies", async () => {
    const { rig: x, sent } = await speaking('llama-cpp-python');
    const reply = await x.llm.complete(mcq(1));
    expect(Mcq.parse(reply.value)).toEqual(reply.value);
    await x.llm.complete(mcq(2));
    expect(x.server.stats().refusedByDialect).toEqual({ '500': 1 });
    // json_schema was refused once, never sent again.
    expect(
      sent.map((s) => [s.response_format?.type, (s.response_format as { schema?: unknown }).schema]),
    ).toEqual([1, 2].map(() => ['json_object', expect.objectContaining({ type: 'object' })]));
    expect(x.server.stats().unbounded).toBe(0);
    expect(warnings(x).filter((m) => /response_format/.test(m))).toHaveLength(1);
  });

  it("OpenAI's strict mode: string lengths refused once, then the schema is sent without them, still strict", async () => {
    const Short = z.object({ answer: z.string().max(40) }).strict();
    const { rig: x, sent } = await speaking('openai-structured');
    const first = await x.llm.complete({ ...mcq(1), schema: Short });
    expect(Short.parse(first.value)).toEqual(first.value);
    await x.llm.complete({ ...mcq(2), schema: Short });
    expect(x.server.stats().refusedByDialect).toEqual({ '400': 1 });
    // The requests answered: still strict json_schema, the length left out.
    expect(sent.map((s) => s.response_format?.type)).toEqual(['json_schema', 'json_schema']);
    expect(JSON.stringify(sent.map((s) => s.response_format))).not.toMatch(/maxLength/);
    expect(warnings(x).filter((m) => /string lengths refused/.test(m))).toHaveLength(1);
  });

  it('a grammar server is sent the string lengths: they bound what it decodes', async () => {
    const { rig: x, sent } = await speaking('plain');
    await x.llm.complete(mcq(1));
    expect(JSON.stringify(sent[0]!.response_format)).toMatch(/"minLength":10/);
  });

  it('a server from before max_completion_tokens is sent max_tokens alone', async () => {
    const { rig: x, sent } = await speaking('old-openai-compatible');
    await x.llm.complete(mcq(1));
    expect(sent).toHaveLength(1);
    expect(sent[0]).not.toHaveProperty('max_completion_tokens');
    expect(sent[0]!.max_tokens).toBe(1024);
  });

  it('reads which field a refusal names, and learns nothing from a context overflow or a refusal it does not send', () => {
    const d = {
      temperature: true,
      maxTokens: true,
      maxCompletionTokens: true,
      responseFormat: 'json_schema' as const,
      streamOptions: true,
      stringLengths: true,
    };
    expect(
      relearn(
        d,
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        null,
      )?.dialect,
    ).toMatchObject({ maxTokens: false, maxCompletionTokens: true });
    expect(
      relearn(d, 'Unrecognized request argument supplied: max_completion_tokens', null)?.dialect,
    ).toMatchObject({
      maxTokens: true,
      maxCompletionTokens: false,
    });
    expect(
      relearn(
        d,
        "'max_tokens' or 'max_completion_tokens' is too large: 1024. This model's maximum context length is 2048 tokens and your request has 1100 input tokens",
        null,
      ),
    ).toBeUndefined();
    expect(relearn(d, "Unsupported parameter: 'top_k'", null)).toBeUndefined();
    // A schema keyword refused is the keyword's: response_format json_schema stays.
    expect(
      relearn(
        d,
        "Invalid schema for response_format 'relevance': In context=('properties', 'reason'), 'maxLength' is not permitted.",
        'response_format',
      )?.dialect,
    ).toEqual({ ...d, stringLengths: false });
    expect(relearn(d, 'Unrecognized request argument supplied: stream_options', null)?.dialect).toMatchObject(
      {
        streamOptions: false,
        maxTokens: true,
      },
    );
    expect(
      relearn(
        { ...d, maxTokens: false },
        'Unrecognized request argument supplied: max_completion_tokens',
        null,
      ),
    ).toBeUndefined();
  });

  it('requestFields, global under per stage, are sent; none may set what the request owns', async () => {
    const { rig: x, sent } = await speaking('plain', {
      requestFields: { chat_template_kwargs: { enable_thinking: false }, reasoning_effort: 'low' },
      stages: {
        mcq: { requestFields: { reasoning_effort: 'minimal', provider: { require_parameters: true } } },
      },
    });
    await x.llm.complete(mcq(1));
    expect(sent[0]).toMatchObject({
      chat_template_kwargs: { enable_thinking: false },
      reasoning_effort: 'minimal',
      provider: { require_parameters: true },
      model: 'test-model',
    });

    const owned = LlmConfig.safeParse({
      requestFields: { messages: [] },
      stages: { classify: { requestFields: { response_format: { type: 'text' } } } },
    });
    expect(owned.success).toBe(false);
    const paths = owned.error!.issues.map((i) => i.path.join('.'));
    expect(paths).toEqual(
      expect.arrayContaining(['requestFields.messages', 'stages.classify.requestFields.response_format']),
    );
  });
});

describe('context', () => {
  it('a declared context caps the budget to what the prompt leaves, and an input that cannot fit is refused unsent', async () => {
    const { rig: x, sent } = await speaking('context-2048', { contextTokens: 2048, maxTokens: 4096 });
    const reply = await x.llm.complete(mcq(1));
    expect(Mcq.parse(reply.value)).toEqual(reply.value);
    expect(sent[0]!.max_completion_tokens).toBe(2048 - promptTokens(mcq(1).messages));

    const long = { ...mcq(2), messages: [{ role: 'user' as const, content: 'word '.repeat(2000) }] };
    const error = await x.llm.complete(long).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmContextError);
    expect((error as Error).message).toMatch(/2048-token context/);
    expect(x.server.stats().requests).toBe(1);
  });

  it("undeclared, the server's overflow (a top-level, older vLLM error body) names the context: budgets are fitted to it from then on, logged once", async () => {
    const { rig: x, sent } = await speaking('context-2048', { maxTokens: 4096 });
    const reply = await x.llm.complete(mcq(1));
    expect(Mcq.parse(reply.value)).toEqual(reply.value);
    await x.llm.complete(mcq(2));
    expect(x.server.stats().refusedByDialect).toEqual({ '400': 1 });
    expect(sent.map((s) => s.max_completion_tokens)).toEqual(
      [1, 2].map((i) => 2048 - promptTokens(mcq(i).messages)),
    );
    expect(warnings(x).filter((m) => /context is 2048 tokens/.test(m))).toHaveLength(1);
  });

  it("undeclared, an input that cannot fit is an LlmContextError in the server's words", async () => {
    const { rig: x } = await speaking('context-2048');
    const long = { ...mcq(1), messages: [{ role: 'user' as const, content: 'word '.repeat(2000) }] };
    const error = await x.llm.complete(long).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmContextError);
    expect((error as Error).message).toMatch(/This model's maximum context length is 2048 tokens/);
    expect((error as Error).message).not.toMatch(/no body/);
    // Known now: the next one is refused unsent.
    const again = await x.llm
      .complete({ ...long, messages: [{ role: 'user', content: 'word '.repeat(2001) }] })
      .catch((e: unknown) => e);
    expect(again).toBeInstanceOf(LlmContextError);
    expect(x.server.stats().requests).toBe(1);
  });
});

describe('reading thinking out of a reply', () => {
  const Any = z.unknown();
  const reply = (content: string, truncated = false) => ({
    content,
    model: 'm',
    usage: { inputTokens: 1, outputTokens: 1 },
    truncated,
  });
  const thinking = fc.string().filter((t) => !t.includes('</think>'));

  it('property: the answer after a <think> block is read as if the block were not there, whatever it holds', () => {
    fc.assert(
      fc.property(thinking, fc.jsonValue(), fc.constantFrom('', '\n', '\n\n'), (t, value, gap) => {
        const json = JSON.stringify(value);
        const checked = checkReply(reply(`<think>${t}</think>${gap}${json}`), Any);
        expect(checked).toEqual({ ok: true, value: JSON.parse(json) });
        // The template opened the tag in the prompt: only its end is in the reply.
        if (!t.includes('{') && !t.includes('<think>'))
          expect(splitThinking(`${t}</think>${json}`).answer).toBe(json);
      }),
    );
  });

  it('property: a reply cut off inside <think> is cut off while thinking, never an answer; a whole one is not', () => {
    fc.assert(
      fc.property(thinking, fc.jsonValue(), (t, value) => {
        expect(cutOffThinking(reply(`<think>${t}`, true))).toBe(true);
        expect(splitThinking(`<think>${t}`).answer).toBe('');
        expect(cutOffThinking(reply(`<think>${t}</think>${JSON.stringify(value)}`, false))).toBe(false);
      }),
    );
  });

  it('leaves a reply without thinking as it is: a </think> quoted inside the JSON answer is the answer', () => {
    const json = JSON.stringify({ reason: 'the text mentions </think> tags' });
    expect(splitThinking(json)).toEqual({ thinking: '', answer: json, unfinished: false });
    expect(checkReply(reply(json), Any)).toEqual({ ok: true, value: JSON.parse(json) });
  });
});
