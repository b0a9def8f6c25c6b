import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { Llm } from '../llm/index.js';
import { RewardVerifier } from '../processors/reward-verifier.js';
import { VerifierJournal } from '../processors/verifier-journal.js';
import { readAnswer, score } from '../reward/index.js';
import { RewardConfig } from '../schemas/config.js';
import type { RewardRequestItem } from '../schemas/feeder.js';
import { LlmConfig } from '../schemas/llm.js';
import { start } from '../test/llm-server/server.js';

// `npm run bench -- reward-verifier` (issue 45, item 3): the reward's cost per output with the
// verifier on, beside the rules alone on the same outputs in the same run. The verifier is the
// test LLM server on loopback answering at once, so a miss is the layer's and the HTTP round
// trip's cost, not a model's (a real verifier adds its own latency, which the deadline bounds).
// Outputs the rules leave undecided, each distinct (so each first ask is a miss); then the same
// again (a hit in memory), then through a new verifier over the same journal (a hit on disk).

const ROOT = new URL('..', import.meta.url).pathname;
const KEY_ENV = 'BIOALCHEMY_BENCH_VERIFIER_KEY';
const N = 400;

const outputs = (n: number): RewardRequestItem[] =>
  Array.from({ length: n }, (_, k) => ({
    kind: 'free-form',
    ground_truth: 'adjacent to the epidermis',
    options: [],
    aliases: [],
    output: `Working through the layers once more (pass ${k}), the hypodermis lies directly beneath the epidermis.`,
  }));

/** Microseconds per output of `each`, run one after another (one trainer's reward calls in turn). */
async function perOutput(
  items: RewardRequestItem[],
  each: (i: RewardRequestItem) => unknown,
): Promise<number> {
  const started = performance.now();
  for (const item of items) await each(item);
  return ((performance.now() - started) * 1000) / items.length;
}

export async function run(): Promise<string[]> {
  const server = await start({ responder: () => JSON.stringify({ verdict: 'correct' }) });
  mkdirSync(join(ROOT, '.cache'), { recursive: true });
  const dir = mkdtempSync(join(ROOT, '.cache', 'bench-verifier-'));
  const opened: { llm: Llm; journal: VerifierJournal }[] = [];
  const verifier = () => {
    const config = RewardConfig.parse({ verifier: {} }).verifier!;
    const journal = new VerifierJournal(join(dir, 'verifier.sqlite'), config.journalEntries);
    const llm = new Llm(
      LlmConfig.parse({ provider: 'openai', baseUrl: server.url, model: 'v', apiKeyEnv: KEY_ENV }),
      {
        journal,
        registry: new Registry(),
        log: pino({ level: 'silent' }),
        env: { [KEY_ENV]: 'sk-bench' },
      },
    );
    opened.push({ llm, journal });
    return new RewardVerifier({
      llm,
      config,
      registry: new Registry(),
    });
  };
  try {
    const items = outputs(N);
    if (items.some((i) => readAnswer(i).undecided === null))
      throw new Error('a bench output is decided by the rules');
    // Warm-up on other outputs: the first calls pay the client's and the server's start.
    const v = verifier();
    await perOutput(
      outputs(20).map((i) => ({ ...i, ground_truth: 'beneath' })),
      (i) => v.score(i),
    );
    const rules = await perOutput(items, (i) => score(i));
    const requestsBefore = server.stats().requests;
    const miss = await perOutput(items, (i) => v.score(i));
    const paid = server.stats().requests - requestsBefore;
    const hit = await perOutput(items, (i) => v.score(i));
    const fresh = verifier();
    const journalHit = await perOutput(items, (i) => fresh.score(i));
    // New spans (the prefix is in the final sentence), each group's five rollouts identical.
    const beforeGroups = server.stats().requests;
    const group = await perOutput(items.slice(0, 80), ({ output, ...item }) =>
      fresh.scoreGroup({ ...item, outputs: Array(5).fill(`In a group, ${output.toLowerCase()}`) }),
    );
    const groupCalls = server.stats().requests - beforeGroups;
    const line = (what: string, us: number) =>
      `${what}: ${us.toFixed(1)} µs/output = ${(us / rules).toFixed(1)}x the rules alone`;
    return [
      `${N} outputs the rules leave undecided, each distinct; the verifier is the test LLM server on loopback (no model latency)`,
      `rules alone: ${rules.toFixed(1)} µs/output`,
      `${line('verifier, cache miss', miss)} (${paid} calls for ${N} outputs)`,
      line('verifier, cache hit (memory)', hit),
      line('verifier, cache hit (journal, a new instance)', journalHit),
      `a group of 5 identical rollouts (one /v1/reward/batch): ${group.toFixed(1)} µs per group, ${groupCalls} calls for 80 groups`,
    ];
  } finally {
    for (const { llm, journal } of opened) {
      await llm.close();
      journal.close();
    }
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
