import { createHash } from 'node:crypto';
import { Counter, type Registry } from 'prom-client';
import { type Llm, LlmReplyError } from '../llm/index.js';
import { VERIFY_PROMPT, VerifyReply, verdictScore, verifyMessages } from '../llm/prompts/verify.js';
import { readAnswer } from '../reward/index.js';
import type { RewardVerifierConfig } from '../schemas/config.js';
import type { RewardGroupRequest, RewardRequestItem, RewardResult } from '../schemas/feeder.js';

// The reward's verifier model (issue 45, item 3; ../shared/DESIGN.md "The reward is measured
// against people"). The rules decide what they can; an output they leave undecided (neither the
// reference nor a conflicting answer in its answer span) is asked of a verifier model through the
// LLM layer, stage `verify`. What it costs, and what it may never do:
// - One call per (reference, answer span, prompt): the rollouts of a group share one in-flight
//   call, a settled verdict is kept in a bounded in-memory cache (least recently used out), and
//   every reply is in the response journal (SQLite, on disk, bounded: verifier-journal.ts), so a
//   replay or a restarted feeder asks again only what was never answered, or was answered long
//   ago and dropped. Nothing in memory or on disk grows with history.
// - Never past the deadline: a reward waits at most reward.verifier.deadlineMs for a slot and the
//   reply, then the rules' verdict (0) stands with the fallback's reason. A call that outlives
//   its deadline still lands in the cache and the journal, so the next asker is paid by it.
// - A reply that is not a verdict of the format is a fallback, counted, never a guess.

export type VerifierFallback = 'verifier-timeout' | 'verifier-unavailable' | 'verifier-invalid-reply';

type Outcome = { score: 0 | 1 } | { fallback: Exclude<VerifierFallback, 'verifier-timeout'> };

export const REWARD_DECISIONS = 'bioalchemy_reward_decisions_total';
export const REWARD_VERIFIER_FALLBACKS = 'bioalchemy_reward_verifier_fallbacks_total';
export const REWARD_VERIFIER_CACHE_HITS = 'bioalchemy_reward_verifier_cache_hits_total';
export const REWARD_VERIFIER_CALLS = 'bioalchemy_reward_verifier_calls_total';

function counter<L extends string>(registry: Registry, name: string, help: string, labels: L[]): Counter<L> {
  // One set per registry: a second verifier on the same registry (tests, a restart) counts on.
  const existing = registry.getSingleMetric(name) as Counter<L> | undefined;
  return existing ?? new Counter({ name, help, labelNames: labels, registers: [registry] });
}

/**
 * What the verifier is told the reference is: for multiple choice the key's letter and its
 * option's text ("C: Golgi apparatus"), since an undecided answer names neither as the rules read it.
 */
function referenceOf(item: RewardRequestItem): string {
  const letter = item.ground_truth.trim().toUpperCase();
  const text =
    item.kind === 'mcq' && /^[A-Z]$/.test(letter) ? item.options[letter.charCodeAt(0) - 65] : undefined;
  return text === undefined ? item.ground_truth : `${letter}: ${text}`;
}

export interface RewardVerifierOptions {
  readonly llm: Llm;
  readonly config: RewardVerifierConfig;
  /** Where the decision, fallback, call and cache-hit counters go (the feeder's /metrics). */
  readonly registry?: Registry;
}

export class RewardVerifier {
  private readonly llm: Llm;
  private readonly config: RewardVerifierConfig;
  /** Verdicts by key, oldest first (a hit moves its key to the end): at most cacheEntries. */
  private readonly cache = new Map<string, 0 | 1>();
  /** Calls sent and not settled, by key: a group's identical rollouts wait on one. */
  private readonly inFlight = new Map<string, Promise<Outcome>>();
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  readonly metrics?: {
    decisions: Counter<'by'>;
    fallbacks: Counter<'reason'>;
    cacheHits: Counter<'where'>;
    calls: Counter<'outcome'>;
  };

  constructor(options: RewardVerifierOptions) {
    this.llm = options.llm;
    this.config = options.config;
    const r = options.registry;
    if (r)
      this.metrics = {
        decisions: counter(
          r,
          REWARD_DECISIONS,
          'Rewards by who decided them: the rules or the verifier model',
          ['by'],
        ),
        fallbacks: counter(
          r,
          REWARD_VERIFIER_FALLBACKS,
          "Undecided outputs the verifier did not decide, by reason (the rules' 0 stood)",
          ['reason'],
        ),
        cacheHits: counter(
          r,
          REWARD_VERIFIER_CACHE_HITS,
          'Verifier verdicts reused, by where: memory (settled), in-flight (a call already sent), journal',
          ['where'],
        ),
        calls: counter(r, REWARD_VERIFIER_CALLS, 'Verifier model calls made, by outcome', ['outcome']),
      };
  }

  /** The reward of one output: the rules', and the verifier's where the rules leave it undecided. */
  async score(item: RewardRequestItem): Promise<RewardResult> {
    const reading = readAnswer(item);
    if (reading.undecided === null) {
      this.metrics?.decisions.inc({ by: 'rules' });
      return { ...reading.result, decidedBy: 'rules' };
    }
    const key = createHash('sha256')
      .update(
        JSON.stringify([
          VERIFY_PROMPT,
          this.config.prompt,
          item.kind,
          item.ground_truth,
          item.options,
          item.aliases,
          item.question ?? '',
          reading.undecided,
        ]),
      )
      .digest('hex');
    const outcome = await this.outcome(key, item, reading.undecided);
    if ('score' in outcome) {
      this.metrics?.decisions.inc({ by: 'verifier' });
      return {
        score: outcome.score,
        reason: `verifier: ${outcome.score === 1 ? 'the answer states the reference' : 'the answer is not the reference'} (${reading.result.reason} by the rules)`,
        decidedBy: 'verifier',
      };
    }
    this.metrics?.decisions.inc({ by: 'rules' });
    this.metrics?.fallbacks.inc({ reason: outcome.fallback });
    return {
      score: reading.result.score,
      reason: `${outcome.fallback}: ${reading.result.reason}`,
      decidedBy: 'rules',
    };
  }

  /** A GRPO group: many outputs for one reference; identical ones cost one call. */
  scoreGroup(group: RewardGroupRequest): Promise<RewardResult[]> {
    const { outputs, ...item } = group;
    return Promise.all(outputs.map((output) => this.score({ ...item, output })));
  }

  /** Verifier calls in flight now (what the concurrency bound holds). */
  get inFlightCalls(): number {
    return this.active;
  }

  private async outcome(
    key: string,
    item: RewardRequestItem,
    span: string,
  ): Promise<Outcome | { fallback: 'verifier-timeout' }> {
    const cached = this.cache.get(key);
    if (cached !== undefined) {
      this.cache.delete(key);
      this.cache.set(key, cached);
      this.metrics?.cacheHits.inc({ where: 'memory' });
      return { score: cached };
    }
    let pending = this.inFlight.get(key);
    if (pending) this.metrics?.cacheHits.inc({ where: 'in-flight' });
    else {
      pending = this.ask(key, item, span);
      this.inFlight.set(key, pending);
      const sent = pending;
      void sent.finally(() => {
        if (this.inFlight.get(key) === sent) this.inFlight.delete(key);
      });
    }
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<{ fallback: 'verifier-timeout' }>((resolve) => {
      timer = setTimeout(() => resolve({ fallback: 'verifier-timeout' }), this.config.deadlineMs);
    });
    try {
      return await Promise.race([pending, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** One call: a slot, the model, the verdict; never rejects. */
  private async ask(key: string, item: RewardRequestItem, span: string): Promise<Outcome> {
    // No slot within the deadline: every asker has had its fallback by then, so the call is not
    // made (the queue holds only what can still be answered in time).
    if (!(await this.slot())) return { fallback: 'verifier-unavailable' };
    try {
      const done = await this.llm.complete({
        stage: 'verify',
        messages: verifyMessages(this.config.prompt, {
          question: item.question,
          reference: referenceOf(item),
          answer: span,
        }),
        schema: VerifyReply,
        promptVersion: `${VERIFY_PROMPT}+${this.config.prompt}`,
      });
      if (done.cached) this.metrics?.cacheHits.inc({ where: 'journal' });
      const score = verdictScore(this.config.prompt, done.value.verdict);
      this.metrics?.calls.inc({ outcome: score === null ? 'invalid' : 'verdict' });
      if (score === null) return { fallback: 'verifier-invalid-reply' };
      this.cache.set(key, score);
      if (this.cache.size > this.config.cacheEntries) this.cache.delete(this.cache.keys().next().value!);
      return { score };
    } catch (e) {
      const invalid = e instanceof LlmReplyError;
      this.metrics?.calls.inc({ outcome: invalid ? 'invalid' : 'failed' });
      return { fallback: invalid ? 'verifier-invalid-reply' : 'verifier-unavailable' };
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }

  /** A call slot, or false when none frees within the deadline. */
  private slot(): Promise<boolean> {
    if (this.active < this.config.concurrency) {
      this.active++;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const take = () => {
        clearTimeout(timer);
        this.active++;
        resolve(true);
      };
      const timer = setTimeout(() => {
        const at = this.waiting.indexOf(take);
        if (at >= 0) this.waiting.splice(at, 1);
        resolve(false);
      }, this.config.deadlineMs);
      this.waiting.push(take);
    });
  }
}
