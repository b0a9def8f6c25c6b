import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CutReplyError, TransientError, UnreadableReplyError } from '../../llm/errors.js';
import { Endpoint } from '../../llm/flow/endpoint.js';
import {
  type EndpointFault,
  faultOf,
  REPEATS_FOR_ENDPOINT,
  REPEATS_FOR_REFUSAL,
  whoseAlone,
} from '../../llm/flow/faults.js';
import { Throttle } from '../../llm/flow/throttle.js';
import { FastClock } from './helpers.js';

/** An error as the openai client throws for an HTTP answer: its status and "STATUS message". */
const http = (status: number, message: string) =>
  Object.assign(new Error(`${status} ${message}`), { status });
/** What the provider makes of a 5xx or 429: a TransientError with the status. */
const transient = (status: number, message: string) =>
  new TransientError(
    status === 429 ? 'rate-limit' : 'server-error',
    `${status} ${message}`,
    undefined,
    status,
  );

const who = { key: 'k', stage: 'relevance', model: 'gpt-x', stageModel: false };

describe('the fault table', () => {
  it.each([
    [http(401, 'Incorrect API key provided'), 'endpoint'],
    [http(403, 'forbidden'), 'endpoint'],
    [http(404, 'The model `x` does not exist.'), 'endpoint'],
    [http(404, 'no route POST /v2/chat/completions'), 'endpoint'],
    [http(400, "This model's maximum context length is 4096 tokens. However, you requested 9000"), 'record'],
    [http(400, 'the request exceeds the available context size (n_ctx 2048)'), 'record'],
    [http(413, 'payload too large'), 'record'],
    [http(400, "Unsupported parameter: 'temperature'"), 'suspect'],
    [http(422, 'response_format json_schema is not supported'), 'suspect'],
    [transient(500, 'internal error'), 'transient'],
    [transient(503, 'loading model'), 'transient'],
    [transient(429, 'rate limited'), 'transient'],
    [new TransientError('connection', 'ECONNREFUSED'), 'transient'],
    [new UnreadableReplyError('text/html', '<html>Sign in</html>'), 'transient'],
    [new CutReplyError(3), 'transient'],
    [new Error('a bug: cannot read properties of undefined'), 'record'],
  ])('%s is the %s fault on its own', (e, whose) => {
    expect(whoseAlone(e)).toBe(whose);
  });

  it.each([
    [http(401, 'Incorrect API key provided'), who, 'llm.apiKeyEnv'],
    [http(404, 'The model `gpt-x` does not exist.'), who, 'llm.model'],
    [
      http(404, 'The model `gpt-x` does not exist.'),
      { ...who, stageModel: true },
      'llm.stages.relevance.model',
    ],
    [http(404, 'Not Found'), who, 'llm.baseUrl'],
    [
      http(400, "Unsupported parameter: 'temperature' is not supported with this model"),
      who,
      'llm.temperature',
    ],
    [http(400, 'max_tokens is not supported, use max_completion_tokens'), who, 'llm.maxTokens'],
    [transient(500, 'response_format json_schema unsupported'), who, 'llm.baseUrl'],
    [new UnreadableReplyError('text/html', '<html>Sign in</html>'), who, 'llm.baseUrl'],
    [new CutReplyError(3), who, 'llm.stream'],
  ])('%s: the key to fix is %s', (e, identity, key) => {
    const fault = faultOf(e, identity, 'http://h/v1');
    expect(fault.configKey).toBe(key);
    expect(fault.message).toBe((e as Error).message.replace(/^\d{3} /, ''));
    expect(fault.fix).toContain(key === 'llm.apiKeyEnv' ? 'apiKeyEnv' : key);
  });
});

/** An endpoint with fast virtual time and what it reported. */
function endpoint(probeIntervalMs = 1000) {
  const clock = new FastClock();
  const faults: (EndpointFault | null)[] = [];
  const e = new Endpoint(
    'http://h/v1',
    {
      limits: { concurrency: 4 },
      retry: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 100 },
      circuit: { failureThreshold: 8, probeIntervalMs },
    },
    clock,
    { onRetry: () => {}, onDown: () => {}, onFault: (f) => faults.push(f) },
  );
  return { e, clock, faults, stage: new Throttle({}, clock) };
}

/** Lets virtual time run (FastClock sleeps end on the next macrotask) for `turns` turns. */
const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

/** The endpoint's faults: every input of a run fails alike. */
const endpointFaults = fc.constantFrom(
  () => http(401, 'Incorrect API key provided'),
  () => http(403, 'Forbidden'),
  () => http(404, 'The model `x` does not exist.'),
  () => http(404, 'no route POST /chat/completions'),
  () => http(400, "Unsupported value: 'temperature' does not support 0.2"),
  () => http(422, 'json_schema response_format is not supported'),
  () => transient(500, 'internal error: grammar from json_schema failed'),
  // Each body differs (a cut-off JSON, a page with the time in it): the same Content-Type is the fault.
  () => new UnreadableReplyError('text/html', `<html>${Math.random()}</html>`),
);

/** A record's own faults, each of one input. */
const recordFaults = fc.constantFrom(
  () => http(400, "This model's maximum context length is 4096 tokens"),
  () => http(413, 'request entity too large'),
  () => new Error('reply parse failure'),
);

describe('an endpoint fault never fails a call; a record fault never stops the stage', () => {
  it('property: every input failing with an endpoint fault waits (none rejects), is reported once, and resumes once fixed', async () => {
    await fc.assert(
      fc.asyncProperty(
        endpointFaults,
        fc.integer({ min: REPEATS_FOR_REFUSAL, max: 12 }),
        async (fault, n) => {
          const { e, faults, stage, clock } = endpoint();
          let fixed = false;
          let sent = 0;
          const settled: string[] = [];
          const calls = Array.from({ length: n }, (_, i) =>
            e
              .send(
                stage,
                1,
                async () => {
                  sent++;
                  if (!fixed) throw fault();
                  return { tokens: 1 };
                },
                { ...who, key: `input-${i}` },
              )
              .then(
                () => settled.push('ok'),
                (err: Error) => settled.push(`failed: ${err.message}`),
              ),
          );
          // Long enough for every retry, the trip and several probes.
          await turns(200);
          expect(settled).toEqual([]);
          expect(faults.filter((f) => f !== null)).toHaveLength(1);
          // The first failure's words (numbers folded: two bodies of one page differ in them).
          const folded = (m: string) => m.replace(/\d+(\.\d+)?/g, 'N');
          expect(e.confirmedFaults().map((f) => folded(f.message))).toEqual([
            folded(fault().message.replace(/^\d{3} /, '')),
          ]);
          const [before, since] = [sent, clock.now()];
          await turns(50);
          // Paused: one probe a probe interval (1 s of virtual time), not every input again.
          expect(sent - before).toBeLessThanOrEqual(Math.floor((clock.now() - since) / 1000) + 1);
          fixed = true;
          await Promise.all(calls);
          expect(settled).toEqual(Array(n).fill('ok'));
          expect(faults.at(-1)).toBeNull();
          expect(e.confirmedFaults()).toEqual([]);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('property: inputs failing on their own fail (a dead letter each), the others complete, and no fault is reported', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.option(recordFaults, { nil: undefined }), { minLength: 1, maxLength: 12 }),
        // At most REPEATS_FOR_ENDPOINT - 1 inputs with one refusal message: still their own.
        fc.array(fc.nat(11), { maxLength: REPEATS_FOR_ENDPOINT - 1 }),
        async (plan, refusedAt) => {
          const { e, faults, stage } = endpoint(50);
          const refused = new Set(refusedAt.filter((i) => i < plan.length));
          const outcomes = await Promise.all(
            plan.map((fault, i) =>
              e
                .send(
                  stage,
                  1,
                  async () => {
                    if (refused.has(i)) throw http(400, "Invalid 'messages': content policy");
                    if (fault) throw fault();
                    return { tokens: 1 };
                  },
                  { ...who, key: `input-${i}` },
                )
                .then(
                  () => 'ok',
                  () => 'failed',
                ),
            ),
          );
          expect(outcomes).toEqual(plan.map((f, i) => (f || refused.has(i) ? 'failed' : 'ok')));
          expect(faults).toEqual([]);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('a 500 that differs between inputs, or comes with successes, is an outage to retry, never a refusal', async () => {
    const { e, faults, stage } = endpoint();
    let n = 0;
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) =>
        e.send(
          stage,
          1,
          async () => {
            // Every other request fails, each with its own message.
            if (n++ % 2 === 0) throw transient(500, `worker ${n} crashed`);
            return { tokens: 1 };
          },
          { ...who, key: `input-${i}` },
        ),
      ),
    );
    // Retried (a call may still run out of attempts, as any outage's), never paused as a refusal.
    expect(results.filter((r) => r.status === 'fulfilled').length).toBeGreaterThan(0);
    expect(faults).toEqual([]);
    expect(e.confirmedFaults()).toEqual([]);
  });

  it('aborting the signal rejects calls waiting on a paused endpoint at once', async () => {
    const { e, stage } = endpoint();
    const stop = new AbortController();
    const calls = Array.from({ length: 5 }, (_, i) =>
      e
        .send(
          stage,
          1,
          async () => {
            throw http(401, 'bad key');
          },
          { ...who, key: `input-${i}` },
          stop.signal,
        )
        .catch((err: unknown) => err),
    );
    await turns(20);
    stop.abort(new Error('stopping'));
    const errors = await Promise.all(calls);
    expect(errors.map((x) => (x as Error).message)).toEqual(Array(5).fill('stopping'));
  });

  it('a model the endpoint does not serve pauses only the stages that ask for it', async () => {
    const { e, faults, stage } = endpoint();
    let served = ['good'];
    const call = (model: string, i: number) =>
      e.send(
        stage,
        1,
        async () => {
          if (!served.includes(model)) throw http(404, `The model \`${model}\` does not exist.`);
          return { tokens: 1 };
        },
        {
          key: `${model}-${i}`,
          stage: model === 'good' ? 'relevance' : 'classify',
          model,
          stageModel: model !== 'good',
        },
      );
    let typoDone = 0;
    const typo = Array.from({ length: 4 }, (_, i) => call('typo', i).then(() => typoDone++));
    await turns(20);
    // The other model's calls go through meanwhile.
    await Promise.all(Array.from({ length: 4 }, (_, i) => call('good', i)));
    await turns(20);
    expect(typoDone).toBe(0);
    expect(faults.map((f) => f?.configKey)).toEqual(['llm.stages.classify.model']);
    served = ['good', 'typo'];
    await Promise.all(typo);
    expect(typoDone).toBe(4);
    expect(e.confirmedFaults()).toEqual([]);
  });
});

describe('streams cut without a finish_reason', () => {
  /**
   * A server that ends the reply it is streaming whenever another request arrives (llama-cpp-python's
   * interrupt_requests): each request streams for three turns of the loop, and one arriving meanwhile
   * cuts it.
   */
  function interrupting() {
    let streaming: { cut: boolean } | undefined;
    let inFlight = 0;
    const stats = { cut: 0, answered: 0, maxInFlight: 0 };
    const attempt = async () => {
      if (streaming) streaming.cut = true;
      const me = { cut: false };
      streaming = me;
      stats.maxInFlight = Math.max(stats.maxInFlight, ++inFlight);
      try {
        for (let turn = 0; turn < 3; turn++) {
          await new Promise((r) => setImmediate(r));
          if (me.cut) {
            stats.cut++;
            throw new CutReplyError(turn);
          }
        }
        stats.answered++;
        return { tokens: 1 };
      } finally {
        inFlight--;
        if (streaming === me) streaming = undefined;
      }
    };
    return { attempt, stats, resetMax: () => (stats.maxInFlight = inFlight) };
  }

  it('cut while another request is in flight, twice with no reply between: one at a time from then on, told once, every call answered and none failed for it', async () => {
    const clock = new FastClock();
    const told: string[] = [];
    const e = new Endpoint(
      'http://h/v1',
      {
        limits: { concurrency: 8 },
        // One attempt each: a cut by another request must not use it up.
        retry: { maxAttempts: 1, baseDelayMs: 10, maxDelayMs: 100 },
        circuit: { failureThreshold: 8, probeIntervalMs: 1000 },
      },
      clock,
      { onRetry: () => {}, onDown: () => {}, onOneAtATime: (model) => told.push(model) },
    );
    const server = interrupting();
    const stage = new Throttle({}, clock);
    const call = (i: number) => e.send(stage, 1, server.attempt, { ...who, key: `input-${i}` });
    await Promise.all(Array.from({ length: 8 }, (_, i) => call(i)));
    expect(server.stats.answered).toBe(8);
    expect(server.stats.cut).toBeGreaterThanOrEqual(2);
    expect(told).toEqual(['gpt-x']);
    expect(e.concurrency()).toEqual([expect.objectContaining({ limit: 1, bound: 1, oneAtATime: true })]);
    // From then on, one at a time: no cut.
    server.resetMax();
    const cutBefore = server.stats.cut;
    await Promise.all(Array.from({ length: 4 }, (_, i) => call(100 + i)));
    expect(server.stats).toMatchObject({ cut: cutBefore, answered: 12, maxInFlight: 1 });
    expect(told).toEqual(['gpt-x']);
  });

  it("a stream cut with nothing else in flight, for 5 inputs and no reply between, is the endpoint's fault: llm.stream", async () => {
    const clock = new FastClock();
    const faults: (EndpointFault | null)[] = [];
    const e = new Endpoint(
      'http://h/v1',
      {
        limits: { concurrency: 1 },
        retry: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 100 },
        circuit: { failureThreshold: 8, probeIntervalMs: 1000 },
      },
      clock,
      { onRetry: () => {}, onDown: () => {}, onFault: (f) => faults.push(f) },
    );
    const stage = new Throttle({}, clock);
    let fixed = false;
    const settled: string[] = [];
    const calls = Array.from({ length: REPEATS_FOR_REFUSAL + 1 }, (_, i) =>
      e
        .send(
          stage,
          1,
          async () => {
            if (!fixed) throw new CutReplyError(i);
            return { tokens: 1 };
          },
          { ...who, key: `input-${i}` },
        )
        .then(
          () => settled.push('ok'),
          (err: Error) => settled.push(`failed: ${err.message}`),
        ),
    );
    await turns(200);
    expect(settled).toEqual([]);
    expect(faults).toEqual([expect.objectContaining({ configKey: 'llm.stream' })]);
    expect(e.concurrency()).toEqual([expect.objectContaining({ oneAtATime: false })]);
    fixed = true;
    await Promise.all(calls);
    expect(settled).toEqual(Array(REPEATS_FOR_REFUSAL + 1).fill('ok'));
  });
});
