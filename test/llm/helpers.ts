import { pino } from 'pino';
import { Registry } from 'prom-client';
import { z } from 'zod';
import type { Clock } from '../../llm/clock.js';
import { Llm, type LlmOptions } from '../../llm/index.js';
import { LlmConfig } from '../../schemas/llm.js';
import { type LlmServer, type ServerOptions, start } from '../llm-server/server.js';

/** A stage reply shaped like the MCQ stage's: enough structure to exercise the schema path. */
export const Mcq = z
  .object({
    question: z.string().min(10),
    options: z.array(z.string().min(1)).length(4),
    answer: z.enum(['A', 'B', 'C', 'D']),
    difficulty: z.number().int().min(1).max(5),
  })
  .strict();

export const ask = (i: number | string) => [
  { role: 'system' as const, content: 'Write one multiple-choice question about the passage.' },
  { role: 'user' as const, content: `Passage ${i}: mitochondria make ATP by oxidative phosphorylation.` },
];

/**
 * Virtual time where every sleep returns at once (on the next macrotask) and moves the clock to
 * its deadline: backoff, Retry-After and rate limits cost no real time, and `elapsed` says how
 * much waiting they asked for. `sleeps` lists each request.
 */
/** The request most tests send: the mcq stage with a numbered question. */
export const mcq = (i: number | string) => ({
  stage: 'mcq' as const,
  messages: ask(i),
  schema: Mcq,
  promptVersion: 'mcq-v1',
});

export class FastClock implements Clock {
  private t = 0;
  readonly sleeps: number[] = [];

  now(): number {
    return this.t;
  }

  sleep(ms: number): Promise<void> {
    const deadline = this.t + ms;
    this.sleeps.push(ms);
    return new Promise((resolve) =>
      setImmediate(() => {
        this.t = Math.max(this.t, deadline);
        resolve();
      }),
    );
  }
}

/** Virtual time that moves only when the test says so. */
export class ManualClock implements Clock {
  private t = 0;
  private timers: { at: number; resolve: () => void }[] = [];

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const timer = { at: this.t + ms, resolve };
      this.timers.push(timer);
      signal?.addEventListener('abort', () => {
        this.timers = this.timers.filter((x) => x !== timer);
        resolve();
      });
    });
  }

  /** Sleeps not yet due. */
  get pending(): number {
    return this.timers.length;
  }

  /** Moves time on, waking due sleepers in deadline order and letting their continuations run. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at);
      const next = this.timers[0];
      if (!next || next.at > end) break;
      this.timers.shift();
      this.t = next.at;
      next.resolve();
      await settle();
    }
    this.t = end;
    await settle();
  }
}

/** Lets every continuation queued by now run (promises and the macrotasks they chain). */
export const settle = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/** Polls `check` until it is true, or fails after `ms` of real time: an event, without a sleep. */
export async function until(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms: ${check.toString()}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export interface Rig {
  server: LlmServer;
  llm: Llm;
  registry: Registry;
  logs: { level: number; msg: string }[];
  records: Parameters<NonNullable<LlmOptions['onCall']>>[0][];
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  close(): Promise<void>;
}

const KEY_ENV = 'BIOALCHEMY_TEST_LLM_KEY';

/** The test server and an Llm pointed at it through the real openai client. */
export async function rig(
  config: z.input<typeof LlmConfig> = {},
  options: LlmOptions = {},
  server: ServerOptions | LlmServer = {},
): Promise<Rig> {
  const srv = 'url' in server ? server : await start(server);
  const registry = new Registry();
  const logs: Rig['logs'] = [];
  const records: Rig['records'] = [];
  const llm = new Llm(
    LlmConfig.parse({
      provider: 'openai',
      baseUrl: srv.url,
      model: 'test-model',
      apiKeyEnv: KEY_ENV,
      retry: { baseDelayMs: 10, maxDelayMs: 1000 },
      ...config,
    }),
    {
      registry,
      log: pino({ level: 'info' }, { write: (line: string) => logs.push(JSON.parse(line)) }),
      onCall: (r) => records.push(r),
      env: { [KEY_ENV]: 'sk-test-secret' },
      ...options,
    },
  );
  return {
    server: srv,
    llm,
    registry,
    logs,
    records,
    async metric(name, labels = {}) {
      const values = (await registry.getSingleMetric(name)?.get())?.values ?? [];
      return values
        .filter((v) => Object.entries(labels).every(([k, x]) => String(v.labels[k]) === x))
        .reduce((n, v) => n + v.value, 0);
    },
    async close() {
      await llm.close();
      if (!('url' in server)) await srv.stop();
    },
  };
}
