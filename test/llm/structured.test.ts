import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { JOURNAL_TOPIC, Llm, LlmReplyError, LogJournal } from '../../llm/index.js';
import { CLASSIFY_PROMPT, classifyMessages, classifyReply } from '../../llm/prompts/classify.js';
import { JudgeReply } from '../../llm/prompts/judge.js';
import { LlmConfig } from '../../schemas/llm.js';
import { loadTaxonomy } from '../../schemas/taxonomy.js';
import { EmbeddedRuntime } from '../../topology/runtime/embedded.js';
import { acceptingJudgeReply } from '../fixtures/records.js';
import { start } from '../llm-server/server.js';
import { ask, Mcq, mcq, type Rig, rig } from './helpers.js';

let r: Rig | undefined;
afterEach(async () => {
  await r?.close();
  r = undefined;
});

describe('structured replies', () => {
  it('returns the validated value, its usage and one accounting record', async () => {
    r = await rig({ inputUsdPerMillion: 1, outputUsdPerMillion: 2 });
    const reply = await r.llm.complete(mcq(1));

    expect(Mcq.parse(reply.value)).toEqual(reply.value);
    expect(reply.cached).toBe(false);
    expect(reply.model).toBe('test-model');
    expect(reply.usage.inputTokens).toBeGreaterThan(0);
    expect(r.server.stats().requests).toBe(1);
    const [record] = r.records;
    expect(record).toMatchObject({
      stage: 'mcq',
      callId: reply.callId,
      cached: false,
      attempts: 1,
      repair: false,
    });
    expect(record!.costUsd).toBeCloseTo(
      (reply.usage.inputTokens * 1 + reply.usage.outputTokens * 2) / 1e6,
      12,
    );
    expect(await r.metric('bioalchemy_llm_calls_total', { outcome: 'ok' })).toBe(1);
    expect(await r.metric('bioalchemy_llm_tokens_total')).toBe(
      reply.usage.inputTokens + reply.usage.outputTokens,
    );
  });

  it('sends the zod schema as a strict json_schema response_format', async () => {
    const server = await start();
    let format: unknown;
    server.setResponder((request) => {
      format = request.response_format;
      return JSON.stringify({
        question: 'Which organelle makes ATP?',
        options: ['a', 'b', 'c', 'd'],
        answer: 'A',
        difficulty: 2,
      });
    });
    r = await rig({}, {}, server);
    await r.llm.complete(mcq(1));
    await server.stop();
    expect(format).toMatchObject({
      type: 'json_schema',
      json_schema: {
        name: 'mcq',
        strict: true,
        schema: { type: 'object', required: expect.arrayContaining(['answer']) },
      },
    });
  });

  it.each(['schema-break', 'truncated'] as const)(
    'repairs a %s reply with one request carrying the error',
    async (fault) => {
      r = await rig({}, {}, { faults: { sequence: [fault] } });
      const reply = await r.llm.complete(mcq(1));

      expect(Mcq.parse(reply.value)).toEqual(reply.value);
      expect(r.server.stats().requests).toBe(2);
      expect(r.records.map((x) => x.repair)).toEqual([false, true]);
      expect(reply.callId).toBe(r.records[1]!.callId);
      expect(await r.metric('bioalchemy_llm_calls_total', { outcome: 'invalid' })).toBe(1);
      expect(await r.metric('bioalchemy_llm_calls_total', { outcome: 'repaired' })).toBe(1);
    },
  );

  it('rejects with LlmReplyError holding the raw reply and the reason when the repair fails too', async () => {
    r = await rig({}, {}, { faults: { sequence: ['schema-break', 'schema-break'] } });
    const error = await r.llm.complete(mcq(1)).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(LlmReplyError);
    const e = error as LlmReplyError;
    expect(e.stage).toBe('mcq');
    expect(e.raw).toContain('__unexpected__');
    expect(e.reason).toMatch(/does not match the schema/);
    expect(e.callId).toBe(r.records[1]!.callId);
    expect(r.server.stats().requests).toBe(2);
  });

  it('never throws anything but LlmReplyError for replies that are not JSON at all', async () => {
    const server = await start({ responder: () => 'I cannot answer that.' });
    r = await rig({}, {}, server);
    const errors = await Promise.all([1, 2, 3].map((i) => r!.llm.complete(mcq(i)).catch((e: unknown) => e)));
    await server.stop();
    for (const e of errors) {
      expect(e).toBeInstanceOf(LlmReplyError);
      expect((e as LlmReplyError).reason).toMatch(/not valid JSON/);
    }
  });
});

describe('replies of the wrong shape', () => {
  const taxonomy = loadTaxonomy();
  const judge = acceptingJudgeReply;
  const label = { category: 'genetics', confidence: 0.7 };
  const classify = (i: number) => ({
    stage: 'classify' as const,
    schema: classifyReply(taxonomy),
    promptVersion: CLASSIFY_PROMPT,
    messages: classifyMessages(taxonomy, { question: `Which gene ${i} is it?`, answer: 'lacZ' }),
  });
  const grade = (i: number) => ({
    stage: 'mcq-quality' as const,
    schema: JudgeReply,
    promptVersion: 'judge-test',
    messages: ask(i),
  });
  // Valid JSON, wrong for the schema; the reason must name where.
  const cases = [
    [
      'a number as a string',
      'grade',
      { ...judge, quality: '4' },
      /expected number, received string.*quality/,
    ],
    ['a score out of range', 'grade', { ...judge, verifiability: 9 }, /Too big.*verifiability/],
    ['a fraction for an integer score', 'grade', { ...judge, difficulty: 2.5 }, /expected int.*difficulty/],
    ['a verdict outside its enum', 'grade', { ...judge, verdict: 'maybe' }, /Invalid option.*verdict/],
    ['an array for the object', 'grade', [judge], /expected object, received array/],
    ['a missing field', 'grade', { ...judge, verdict: undefined }, /verdict/],
    ['an extra field', 'grade', { ...judge, confidence: 1 }, /Unrecognized key.*confidence/],
    [
      'null everywhere',
      'grade',
      Object.fromEntries(Object.keys(judge).map((k) => [k, null])),
      /received null/,
    ],
    ['null for the reply', 'classify', null, /expected object, received null/],
    [
      'a label not in the taxonomy',
      'classify',
      { labels: [{ category: 'virology', confidence: 0.9 }] },
      /"virology" is not a category id of MeSH Biology.*labels\[0\]\.category/,
    ],
    [
      'a category name for its id',
      'classify',
      { labels: [{ category: 'Genetics', confidence: 0.9 }] },
      /"Genetics" is not a category id/,
    ],
    [
      'a label without its category',
      'classify',
      { labels: [{ confidence: 0.9 }] },
      /a category id is required.*labels\[0\]\.category/,
    ],
    ['an empty label list', 'classify', { labels: [] }, /Too small.*labels/],
    [
      'four labels',
      'classify',
      {
        labels: ['genetics', 'ecology', 'botany', 'zoology'].map((category) => ({
          category,
          confidence: 0.5,
        })),
      },
      /Too big.*labels/,
    ],
    [
      'an object for the label array',
      'classify',
      { labels: label },
      /expected array, received object.*labels/,
    ],
    [
      'a confidence as a string',
      'classify',
      { labels: [{ ...label, confidence: '0.7' }] },
      /expected number, received string.*confidence/,
    ],
    ['a confidence over 1', 'classify', { labels: [{ ...label, confidence: 70 }] }, /Too big.*confidence/],
    [
      'labels as bare strings',
      'classify',
      { labels: ['genetics'] },
      /expected object, received string.*labels\[0\]/,
    ],
  ] as const;
  const complete = (stage: string, i: number): Promise<unknown> =>
    stage === 'grade' ? r!.llm.complete(grade(i)) : r!.llm.complete(classify(i));
  const good = (stage: string) => JSON.stringify(stage === 'grade' ? judge : { labels: [label] });

  it.each(cases)('repairs %s with one request that says what was wrong', async (_, stage, bad, reason) => {
    const server = await start();
    const repairs: string[] = [];
    server.setResponder((req) => {
      if (!req.messages.some((m) => m.role === 'assistant')) return JSON.stringify(bad);
      repairs.push(String(req.messages.at(-1)!.content));
      return good(stage);
    });
    r = await rig({}, {}, server);
    const reply = (await complete(stage, 1)) as { value: unknown };
    await server.stop();
    expect(reply.value).toEqual(JSON.parse(good(stage)));
    expect(repairs).toHaveLength(1);
    expect(repairs[0]).toMatch(reason);
  });

  it.each(cases)(
    'gives up on %s repeated after the repair with an LlmReplyError naming it',
    async (_, stage, bad, reason) => {
      const server = await start({ responder: () => JSON.stringify(bad) });
      r = await rig({}, {}, server);
      const error = await complete(stage, 2).catch((e: unknown) => e);
      await server.stop();
      expect(error).toBeInstanceOf(LlmReplyError);
      expect((error as LlmReplyError).reason).toMatch(/^does not match the schema: /);
      expect((error as LlmReplyError).reason).toMatch(reason);
      expect((error as LlmReplyError).raw).toBe(JSON.stringify(bad));
      expect(server.stats().requests).toBe(2);
    },
  );

  it('takes JSON wrapped in a Markdown code fence as the reply, without a repair', async () => {
    const replies = [`\`\`\`json\n${good('classify')}\n\`\`\``, `\uFEFF\`\`\`\n${good('classify')}\`\`\`\n`];
    const server = await start();
    let n = 0;
    server.setResponder(() => replies[n++ % replies.length]!);
    r = await rig({}, {}, server);
    const values = [await r.llm.complete(classify(3)), await r.llm.complete(classify(4))];
    await server.stop();
    expect(values.map((v) => v.value)).toEqual([{ labels: [label] }, { labels: [label] }]);
    expect(server.stats().requests).toBe(2);
  });

  it('refuses a fenced reply whose JSON is wrong like any other, and text around a fence is not JSON', async () => {
    const server = await start({ responder: () => 'Here it is:\n```json\n{"labels": []}\n```' });
    r = await rig({}, {}, server);
    const error = await r.llm.complete(classify(5)).catch((e: unknown) => e);
    await server.stop();
    expect((error as LlmReplyError).reason).toMatch(/^not valid JSON/);
  });
});

describe('response journal', () => {
  it('answers a repeated request from the journal without a call', async () => {
    r = await rig();
    const first = await r.llm.complete(mcq(1));
    const again = await r.llm.complete(mcq(1));

    expect(again.value).toEqual(first.value);
    expect(again.cached).toBe(true);
    expect(r.server.stats().requests).toBe(1);
    expect(r.records[1]).toMatchObject({
      cached: true,
      costUsd: 0,
      attempts: 0,
      requestKey: r.records[0]!.requestKey,
    });
    expect(await r.metric('bioalchemy_llm_journal_hits_total')).toBe(1);
  });

  it('keys on the prompt version and parameters', async () => {
    r = await rig();
    await r.llm.complete(mcq(1));
    await r.llm.complete({ ...mcq(1), promptVersion: 'mcq-v2' });
    await r.llm.complete({ ...mcq(1), params: { temperature: 0.7 } });
    expect(r.server.stats().requests).toBe(3);
  });

  it('survives reopening the log it is kept in, repairs included: a replay pays for nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'llm-journal-'));
    const server = await start({ faults: { sequence: ['schema-break'] } });
    const openJournal = async () => {
      const runtime = EmbeddedRuntime.open(dir);
      await runtime.ensureTopics([JOURNAL_TOPIC]);
      return { runtime, journal: await LogJournal.open(runtime) };
    };
    try {
      let log = await openJournal();
      r = await rig({}, { journal: log.journal }, server);
      const first = await Promise.all([1, 2, 3].map((i) => r!.llm.complete(mcq(i))));
      await r.close();
      await log.runtime.close();
      expect(server.stats().requests).toBe(4);

      log = await openJournal();
      // Read when first asked for, not at open.
      expect(log.journal.size).toBe(0);
      r = await rig({}, { journal: log.journal }, server);
      const replayed = await Promise.all([1, 2, 3].map((i) => r!.llm.complete(mcq(i))));
      expect(log.journal.size).toBe(4);
      await log.runtime.close();
      expect(replayed.map((x) => x.value)).toEqual(first.map((x) => x.value));
      expect(replayed.every((x) => x.cached)).toBe(true);
      expect(server.stats().requests).toBe(4);
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('config', () => {
  it('fails at construction when the API key variable is not set', () => {
    const config = LlmConfig.parse({ baseUrl: 'http://127.0.0.1:1/v1', apiKeyEnv: 'NO_SUCH_KEY_VAR' });
    expect(() => new Llm(config, { env: {} })).toThrow(/NO_SUCH_KEY_VAR is not set/);
  });

  it('resolves each stage from the global block under its overrides', () => {
    const config = LlmConfig.parse({
      stages: { classify: { provider: 'openai', model: 'big', temperature: 0.5 } },
    });
    expect(config.provider).toBeUndefined();
    // No baseUrl: the local model, except for the stage that asks for openai (and so needs a key).
    expect(() => new Llm(config, { env: {} })).toThrow(/OPENAI_API_KEY/);
    expect(() => new Llm(config, { env: { OPENAI_API_KEY: 'k' } })).not.toThrow();
  });
});
