import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Llm } from '../../llm/index.js';
import { Feeder } from '../../processors/feeder/feeder.js';
import {
  REWARD_DECISIONS,
  REWARD_VERIFIER_CACHE_HITS,
  REWARD_VERIFIER_FALLBACKS,
  RewardVerifier,
} from '../../processors/reward-verifier.js';
import {
  REWARD_VERIFIER_JOURNAL_BYTES,
  REWARD_VERIFIER_JOURNAL_ENTRIES,
  VerifierJournal,
  verifierJournalGauges,
} from '../../processors/verifier-journal.js';
import { readAnswer, score } from '../../reward/index.js';
import { RewardConfig, type RewardVerifierConfig } from '../../schemas/config.js';
import { RewardRequestItem, type RewardResult } from '../../schemas/feeder.js';
import { LlmConfig } from '../../schemas/llm.js';
import { buildServer } from '../../server/feeder-api.js';
import { type LlmServer, type Responder, start } from '../llm-server/server.js';

// Issue 45, item 3: the verifier model for what the rules cannot decide, with the project's test
// LLM server as the verifier. Its request count is what a verifier call costs.

const KEY_ENV = 'BIOALCHEMY_TEST_VERIFIER_KEY';

/** Pays an answer that says "beneath the epidermis" (right by meaning), refuses any other. */
const byMeaning: Responder = (request) => {
  const user = String(request.messages.at(-1)?.content ?? '');
  return JSON.stringify({ verdict: /beneath the epidermis/.test(user) ? 'correct' : 'incorrect' });
};

const REFERENCE = {
  kind: 'free-form' as const,
  ground_truth: 'adjacent to the epidermis',
  options: [],
  aliases: [],
};
const BY_MEANING = 'Looking at the tissue layers, the hypodermis lies directly beneath the epidermis.';

let server: LlmServer;
let dir: string;
const open: { llm: Llm; journal: VerifierJournal; feeder?: Feeder }[] = [];

beforeAll(async () => {
  server = await start({ responder: byMeaning });
  dir = mkdtempSync(join(tmpdir(), 'verifier-'));
});
afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(async () => {
  for (const { llm, journal, feeder } of open.splice(0)) {
    await llm.close();
    journal.close();
    feeder?.close();
  }
  server.setResponder(byMeaning);
  server.setLatency({ kind: 'fixed', ms: 0 });
  server.resetStats();
});

function verifierRig(config: Partial<RewardVerifierConfig> = {}, journalPath = ':memory:') {
  const verifierConfig = RewardConfig.parse({ verifier: config }).verifier!;
  const journal = new VerifierJournal(journalPath, verifierConfig.journalEntries);
  const llm = new Llm(
    LlmConfig.parse({
      provider: 'openai',
      baseUrl: server.url,
      model: 'verifier',
      apiKeyEnv: KEY_ENV,
      retry: { baseDelayMs: 10, maxDelayMs: 100 },
    }),
    { journal, registry: new Registry(), log: pino({ level: 'silent' }), env: { [KEY_ENV]: 'sk-test' } },
  );
  const registry = new Registry();
  const verifier = new RewardVerifier({ llm, config: verifierConfig, registry });
  verifierJournalGauges(registry, journal);
  const feeder = Feeder.open(':memory:', { batchSize: 4, leaseMs: 60_000 });
  open.push({ llm, journal, feeder });
  const app = buildServer(feeder, { bodyLimit: 1 << 20, verifier });
  const metric = async (name: string, labels: Record<string, string> = {}) =>
    ((await registry.getSingleMetric(name)?.get())?.values ?? [])
      .filter((v) => Object.entries(labels).every(([k, x]) => String(v.labels[k]) === x))
      .reduce((n, v) => n + v.value, 0);
  return { verifier, app, metric, feeder, journal };
}

async function post(app: ReturnType<typeof buildServer>, url: string, payload: unknown) {
  const res = await app.inject({ method: 'POST', url, payload: payload as object });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

describe('the reward verifier (reward.verifier)', () => {
  it('pays an undecided answer that is right by meaning, and says the verifier decided', async () => {
    expect(readAnswer({ ...REFERENCE, output: BY_MEANING }).undecided).not.toBeNull();
    const { app, metric } = verifierRig();
    const r = (await post(app, '/v1/reward', { ...REFERENCE, output: BY_MEANING })) as RewardResult;
    expect(r.score).toBe(1);
    expect(r.decidedBy).toBe('verifier');
    expect(r.reason).toMatch(/^verifier: /);
    expect(server.stats().requests).toBe(1);
    expect(await metric(REWARD_DECISIONS, { by: 'verifier' })).toBe(1);
    // Undecided and wrong by meaning: the verifier's 0.
    const wrong = (await post(app, '/v1/reward', {
      ...REFERENCE,
      output: 'The layer sits deep in the vascular cylinder.',
    })) as RewardResult;
    expect(wrong).toMatchObject({ score: 0, decidedBy: 'verifier' });
  });

  it('never asks about an output the rules decide', async () => {
    const { app, metric } = verifierRig();
    const paid = (await post(app, '/v1/reward', {
      ...REFERENCE,
      output: 'The answer is adjacent to the epidermis.',
    })) as RewardResult;
    const refused = (await post(app, '/v1/reward', { ...REFERENCE, output: '' })) as RewardResult;
    expect(paid).toMatchObject({ score: 1, decidedBy: 'rules' });
    expect(refused).toMatchObject({ score: 0, decidedBy: 'rules', reason: 'empty output' });
    expect(server.stats().requests).toBe(0);
    expect(await metric(REWARD_DECISIONS, { by: 'rules' })).toBe(2);
  });

  it('a group of 5 identical rollouts and its replays cost one verifier call, a new instance reading the journal included', async () => {
    const journalPath = join(dir, 'group', 'verifier.sqlite');
    const first = verifierRig({}, journalPath);
    const group = { ...REFERENCE, outputs: Array.from({ length: 5 }, () => BY_MEANING) };
    const a = (await post(first.app, '/v1/reward/batch', group)) as { scores: RewardResult[] };
    expect(a.scores.map((s) => s.score)).toEqual([1, 1, 1, 1, 1]);
    expect(server.stats().requests).toBe(1);
    expect(await first.metric(REWARD_VERIFIER_CACHE_HITS, { where: 'in-flight' })).toBe(4);
    // The replay in the same process: the settled verdict, also through {items} and one by one.
    await post(first.app, '/v1/reward/batch', group);
    await post(first.app, '/v1/reward', { items: group.outputs.map((output) => ({ ...REFERENCE, output })) });
    expect(server.stats().requests).toBe(1);
    expect(await first.metric(REWARD_VERIFIER_CACHE_HITS, { where: 'memory' })).toBe(10);
    // A new instance (a restarted feeder) over the same journal file: answered from the journal.
    const { llm, journal, feeder } = open.pop()!;
    await llm.close();
    journal.close();
    feeder?.close();
    const second = verifierRig({}, journalPath);
    const b = (await post(second.app, '/v1/reward/batch', group)) as { scores: RewardResult[] };
    expect(b.scores).toEqual(a.scores);
    expect(server.stats().requests).toBe(1);
    expect(await second.metric(REWARD_VERIFIER_CACHE_HITS, { where: 'journal' })).toBe(1);
  });

  it('keeps its journal under journalEntries over a long run of distinct verdicts; a restart answers the kept ones from it', async () => {
    const journalPath = join(dir, 'bounded', 'verifier.sqlite');
    const BOUND = 40;
    const output = (i: number) => `In section ${i}, the hypodermis lies directly beneath the epidermis.`;
    expect(readAnswer({ ...REFERENCE, output: output(7) }).undecided).not.toBeNull();
    const first = verifierRig({ journalEntries: BOUND, cacheEntries: 1 }, journalPath);
    let bytesAtBound = 0;
    for (let i = 0; i < 400; i++) {
      await post(first.app, '/v1/reward', { ...REFERENCE, output: output(i) });
      expect(first.journal.size.entries).toBe(Math.min(i + 1, BOUND));
      if (i + 1 === 2 * BOUND) bytesAtBound = first.journal.size.bytes;
    }
    expect(server.stats().requests).toBe(400);
    expect(await first.metric(REWARD_VERIFIER_JOURNAL_ENTRIES)).toBe(BOUND);
    // Freed pages are reused: 320 more verdicts through a full journal leave the file its size.
    expect(await first.metric(REWARD_VERIFIER_JOURNAL_BYTES)).toBe(bytesAtBound);
    const { llm, journal, feeder } = open.pop()!;
    await llm.close();
    journal.close();
    feeder?.close();
    server.resetStats();
    // A restarted feeder: the newest BOUND verdicts come from the journal, an older one costs a call.
    const second = verifierRig({ journalEntries: BOUND }, journalPath);
    expect(second.journal.size.entries).toBe(BOUND);
    for (let i = 400 - BOUND; i < 400; i++) {
      const r = (await post(second.app, '/v1/reward', { ...REFERENCE, output: output(i) })) as RewardResult;
      expect(r).toMatchObject({ score: 1, decidedBy: 'verifier' });
    }
    expect(server.stats().requests).toBe(0);
    expect(await second.metric(REWARD_VERIFIER_CACHE_HITS, { where: 'journal' })).toBe(BOUND);
    await post(second.app, '/v1/reward', { ...REFERENCE, output: output(0) });
    expect(server.stats().requests).toBe(1);
    expect(second.journal.size.entries).toBe(BOUND);
  });

  it('brings a journal over a lowered bound under it, a slice per turn of the event loop', async () => {
    const journalPath = join(dir, 'lowered', 'verifier.sqlite');
    const reply = {
      content: '{"verdict":"correct"}',
      model: 'verifier',
      usage: { inputTokens: 50, outputTokens: 5 },
      truncated: false,
    };
    const big = new VerifierJournal(journalPath, 10_000);
    for (let i = 0; i < 2_500; i++) big.put(`k${i}`, reply);
    big.close();
    const small = new VerifierJournal(journalPath, 100);
    // The first slice at open; the rest between turns, never the newest.
    expect(small.size.entries).toBe(2_500 - 1_000);
    await vi.waitFor(() => expect(small.size.entries).toBe(100), { timeout: 5_000, interval: 5 });
    expect(small.get('k2499')).toBeDefined();
    expect(small.get('k2399')).toBeUndefined();
    small.close();
  });

  it('a verifier slow past the deadline gives the rules verdict within the deadline', async () => {
    server.setLatency({ kind: 'fixed', ms: 5_000 });
    const { app, metric } = verifierRig({ deadlineMs: 200 });
    const started = performance.now();
    const r = (await post(app, '/v1/reward/batch', { ...REFERENCE, outputs: [BY_MEANING, BY_MEANING] })) as {
      scores: RewardResult[];
    };
    const took = performance.now() - started;
    // The deadline, not the verifier's 5 s: the slack is for a loaded CI machine's event loop.
    expect(took).toBeLessThan(200 + 1_500);
    for (const s of r.scores) {
      expect(s).toMatchObject({ score: 0, decidedBy: 'rules' });
      expect(s.reason).toMatch(/^verifier-timeout: no candidate answer/);
    }
    expect(await metric(REWARD_VERIFIER_FALLBACKS, { reason: 'verifier-timeout' })).toBe(2);
  });

  it('a reply that is no verdict is a fallback, counted', async () => {
    server.setResponder(() => JSON.stringify({ verdict: 'maybe' }));
    const { app, metric } = verifierRig();
    const r = (await post(app, '/v1/reward', { ...REFERENCE, output: BY_MEANING })) as RewardResult;
    expect(r).toMatchObject({ score: 0, decidedBy: 'rules' });
    expect(r.reason).toMatch(/^verifier-invalid-reply: /);
    expect(await metric(REWARD_VERIFIER_FALLBACKS, { reason: 'verifier-invalid-reply' })).toBe(1);
    expect(await metric(REWARD_DECISIONS, { by: 'verifier' })).toBe(0);
  });

  it("tells the verifier a multiple-choice key with its option's text", async () => {
    const seen: string[] = [];
    server.setResponder((request) => {
      seen.push(String(request.messages.at(-1)?.content));
      return JSON.stringify({ verdict: 'incorrect' });
    });
    const { app } = verifierRig();
    const mcq = {
      kind: 'mcq',
      ground_truth: 'C',
      options: ['Mitochondria', 'Ribosome', 'Golgi apparatus', 'Nucleus'],
    };
    const output = 'Proteins are sorted and packaged for secretion there.';
    expect(readAnswer(RewardRequestItem.parse({ ...mcq, output })).undecided).not.toBeNull();
    await post(app, '/v1/reward', { ...mcq, output });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toContain('Reference answer: C: Golgi apparatus');
  });

  it('the published formats read their own verdict tokens', async () => {
    server.setResponder((request) => {
      const user = String(request.messages.at(-1)?.content ?? '');
      if (user.includes('<Standard Answer Begin>')) return JSON.stringify({ verdict: 'A' });
      if (user.includes('### Ground Truth Answer:'))
        return JSON.stringify({ verdict: 'Final Decision: Yes' });
      return JSON.stringify({ verdict: 'incorrect' });
    });
    for (const prompt of ['compass-verifier', 'general-verifier'] as const) {
      const { app } = verifierRig({ prompt });
      const r = (await post(app, '/v1/reward', { ...REFERENCE, output: BY_MEANING })) as RewardResult;
      expect(r, prompt).toMatchObject({ score: 1, decidedBy: 'verifier' });
    }
  });

  it('with the verifier on, every output the rules decide gets the rules score (property)', async () => {
    // The team's tables (formats, long-form answers), and arbitrary text around the reference.
    const tables = ['reward-cases.json', 'reward-long-form.json'].flatMap(
      (f) => JSON.parse(readFileSync(new URL(`../fixtures/${f}`, import.meta.url), 'utf8')) as unknown[],
    );
    const items = tables.flatMap((t) => {
      const parsed = RewardRequestItem.safeParse(
        Object.fromEntries(Object.entries(t as object).filter(([k]) => k in RewardRequestItem.shape)),
      );
      return parsed.success ? [parsed.data] : [];
    });
    expect(items.length).toBeGreaterThan(100);
    const { verifier } = verifierRig();
    const arbitrary = fc.oneof(
      fc.constantFrom(...items),
      fc
        .tuple(fc.string(), fc.constantFrom('adjacent to the epidermis', 'the cortex', ''), fc.string())
        .map(([a, mid, b]) => RewardRequestItem.parse({ ...REFERENCE, output: `${a} ${mid} ${b}` })),
    );
    await fc.assert(
      fc.asyncProperty(arbitrary, async (item) => {
        if (readAnswer(item).undecided !== null) return;
        expect(await verifier.score(item)).toEqual({ ...score(item), decidedBy: 'rules' });
      }),
      { numRuns: 300 },
    );
    expect(server.stats().requests).toBe(0);
  });

  it('an unknown key under reward.verifier is a config error naming its path', () => {
    const r = RewardConfig.safeParse({ verifier: { deadlineMs: 100, deadline: 5 } });
    expect(r.success).toBe(false);
    expect(JSON.stringify(r.error?.issues)).toMatch(/deadline/);
    expect(r.error?.issues[0]?.path).toEqual(['verifier']);
  });
});
