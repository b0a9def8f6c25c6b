import { afterEach, describe, expect, it } from 'vitest';
import { Circuit } from '../../llm/flow/circuit.js';
import { TokenBucket } from '../../llm/flow/token-bucket.js';
import { FastClock, ManualClock, mcq, type Rig, rig, settle, until } from './helpers.js';

let r: Rig | undefined;
afterEach(async () => {
  await r?.close();
  r = undefined;
});

/** Starts takes and reports, in order, which have been granted so far. */
function tracked(bucket: TokenBucket, sizes: number[]): number[] {
  const granted: number[] = [];
  sizes.forEach((n, i) => void bucket.take(n).then(() => granted.push(i)));
  return granted;
}

describe('token bucket', () => {
  it("lets a minute's allowance through at once, then one per 1/rate", async () => {
    const clock = new ManualClock();
    const granted = tracked(new TokenBucket(60, clock), Array(62).fill(1));
    await settle();
    expect(granted).toHaveLength(60);
    await clock.advance(999);
    expect(granted).toHaveLength(60);
    await clock.advance(1);
    expect(granted).toHaveLength(61);
    await clock.advance(1000);
    expect(granted).toHaveLength(62);
  });

  it('serves takers in order: a large take is not overtaken by small ones', async () => {
    const clock = new ManualClock();
    const bucket = new TokenBucket(100, clock);
    const granted = tracked(bucket, [90, 50, 1, 1]);
    await settle();
    expect(granted).toEqual([0]);
    await clock.advance(24_000); // 10 + 40 = 50 tokens
    expect(granted).toEqual([0, 1]);
    await clock.advance(600); // 1 token
    expect(granted).toEqual([0, 1, 2]);
  });

  it('charges what a call really used: later takers wait off the debt', async () => {
    const clock = new ManualClock();
    const bucket = new TokenBucket(60, clock);
    await bucket.take(10);
    bucket.settle(100); // used 110, estimated 10: the level is now 50 - 100 = -50
    const granted = tracked(bucket, [1]);
    await clock.advance(50_999);
    expect(granted).toEqual([]);
    await clock.advance(1);
    expect(granted).toEqual([0]);
  });
});

describe('circuit', () => {
  it('while down, lets one probe through per interval and releases everyone on success', async () => {
    const clock = new ManualClock();
    const changes: boolean[] = [];
    const circuit = new Circuit({ failureThreshold: 2, probeIntervalMs: 1000 }, clock, (d) =>
      changes.push(d),
    );
    expect(circuit.failure(false)).toBe(false);
    expect(circuit.failure(false)).toBe(true);
    const passed: boolean[] = [];
    for (let i = 0; i < 3; i++) void circuit.pass().then((probe) => passed.push(probe));
    await clock.advance(999);
    expect(passed).toEqual([]);
    await clock.advance(1);
    expect(passed).toEqual([true]);
    await clock.advance(5000); // the probe has not answered yet: no second one
    expect(passed).toEqual([true]);
    circuit.failure(true);
    await clock.advance(1000);
    expect(passed).toEqual([true, true]);
    circuit.success();
    await settle();
    expect(passed).toEqual([true, true, false]);
    expect(changes).toEqual([true, false]);
  });
});

describe('limits against the endpoint', () => {
  it('keeps at most `concurrency` requests in flight, endpoint-wide and per stage', async () => {
    // A server that states more slots than the bound: the adaptive limit starts at the bound.
    r = await rig(
      { concurrency: 4, stages: { relevance: { concurrency: 2 } } },
      {},
      { latency: { kind: 'fixed', ms: 20 }, slots: 64, statesSlots: true },
    );
    await Promise.all(Array.from({ length: 24 }, (_, i) => r!.llm.complete(mcq(i))));
    expect(r.server.stats().maxInFlight).toBe(4);

    r.server.resetStats();
    const relevance = (i: number) => ({ ...mcq(i), stage: 'relevance' as const });
    await Promise.all(Array.from({ length: 12 }, (_, i) => r!.llm.complete(relevance(i))));
    expect(r.server.stats().maxInFlight).toBe(2);
  });

  it('spaces requests by requestsPerMinute: the virtual time taken is what the rate implies', async () => {
    const clock = new FastClock();
    r = await rig({ requestsPerMinute: 10 }, { clock });
    await Promise.all(Array.from({ length: 30 }, (_, i) => r!.llm.complete(mcq(i))));
    expect(r.server.stats().requests).toBe(30);
    // 10 at once, then 20 more at 10/min: two minutes of waiting, no less, barely more.
    expect(clock.now()).toBeGreaterThanOrEqual(120_000);
    expect(clock.now()).toBeLessThan(121_000);
  });

  it('spaces requests by tokensPerMinute per stage', async () => {
    const clock = new FastClock();
    r = await rig({ maxTokens: 100, stages: { mcq: { tokensPerMinute: 300 } } }, { clock });
    await Promise.all(Array.from({ length: 20 }, (_, i) => r!.llm.complete(mcq(i))));
    const used = r.records.reduce((n, x) => n + x.inputTokens + x.outputTokens, 0);
    expect(used).toBeGreaterThan(3 * 300);
    // Every token beyond the first minute's 300 waited for its refill (estimates are settled to
    // real use, and each estimate covered its call, so the bucket ends the run at or above zero).
    expect(clock.now()).toBeGreaterThanOrEqual(((used - 300) / 300) * 60_000);
  });
});

describe('budget', () => {
  it('pauses calls when the day is spent, with one log line and a gauge, and resumes on a higher cap', async () => {
    r = await rig({ budget: { tokensPerDay: 10 } });
    await r.llm.complete(mcq(1));
    const waiting = [2, 3, 4].map((i) => r!.llm.complete(mcq(i)));
    await until(async () => (await r!.metric('bioalchemy_llm_budget_paused')) === 1);
    expect(r.server.stats().requests).toBe(1);
    expect(r.logs.filter((l) => /budget is spent/.test(l.msg))).toHaveLength(1);

    r.llm.setBudget({ tokensPerDay: 1_000_000 });
    const replies = await Promise.all(waiting);
    expect(replies).toHaveLength(3);
    expect(r.server.stats().requests).toBe(4);
    expect(await r.metric('bioalchemy_llm_budget_paused')).toBe(0);
    expect(r.logs.filter((l) => /resumed/.test(l.msg))).toHaveLength(1);
  });

  it('counts USD from the configured prices', async () => {
    r = await rig({ budget: { usdPerDay: 0.0001 }, inputUsdPerMillion: 1_000, outputUsdPerMillion: 1_000 });
    await r.llm.complete(mcq(1));
    const second = r.llm.complete(mcq(2));
    await until(async () => (await r!.metric('bioalchemy_llm_budget_paused')) === 1);
    expect(r.logs.find((l) => /budget is spent/.test(l.msg))?.msg).toMatch(
      /\$0\.\d+ spent today, budget \$0\.0001/,
    );
    r.llm.setBudget({});
    await second;
  });
});
