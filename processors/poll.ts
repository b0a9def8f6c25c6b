import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { contentHash } from '../schemas/ids.js';
import { type PollerConfig, PollerState } from '../schemas/pollers.js';
import { apiDeadLetter } from '../sources/pollers/api-items.js';
import { createPoller } from '../sources/pollers/config.js';
import { HttpError } from '../sources/pollers/http.js';
import { type HttpCall, type Poller, type RetryAfter, UnreadablePage } from '../sources/pollers/types.js';
import type { Runtime } from '../topology/runtime/types.js';
import type { ProcessorTask } from '../topology/task.js';
import { addCounts, emitItem, type IngestCounts, ingestProcessor, noCounts } from './ingest.js';

/** How a poller waits out an unreadable page, and when its stall becomes an alert. */
export type StallSettings = Pick<PollerConfig, 'stallBackoffMs' | 'maxStallBackoffMs' | 'stallAlertAfterMs'>;

export interface ConfiguredPoller {
  readonly poller: Poller;
  /** Where its state lives in the ingest task's `cursors` store: one per distinct configuration. */
  readonly cursorKey: string;
  readonly stall: StallSettings;
}

export function configuredPoller(config: PollerConfig, poller: Poller): ConfiguredPoller {
  const { stallBackoffMs, maxStallBackoffMs, stallAlertAfterMs } = config;
  return {
    poller,
    cursorKey: `${config.kind}:${contentHash(JSON.stringify(config))}`,
    stall: { stallBackoffMs, maxStallBackoffMs, stallAlertAfterMs },
  };
}

export function configuredPollers(configs: readonly PollerConfig[], log: Logger): ConfiguredPoller[] {
  return configs.map((config) =>
    configuredPoller(
      config,
      createPoller(config, {
        log,
        ...(process.env.NCBI_API_KEY ? { apiKey: process.env.NCBI_API_KEY } : {}),
      }),
    ),
  );
}

/** A stored value of the `cursors` store as a PollerState; before stalls were kept it was the bare cursor. */
function pollerStateOf(stored: unknown, poller: string): PollerState {
  if (stored === undefined || stored === null) return { poller, cursor: null, stalled: null, paused: null };
  if (typeof stored === 'string') return { poller, cursor: stored, stalled: null, paused: null };
  return PollerState.parse(stored);
}

const stateIn = (task: ProcessorTask, p: ConfiguredPoller) =>
  pollerStateOf(task.readState('cursors', p.cursorKey), p.poller.name);

/** Every poller's state as committed to the log, without joining the ingest group: for status and the dashboard. */
export async function readPollerStates(runtime: Runtime): Promise<(PollerState & { cursorKey: string })[]> {
  const rows = await runtime.readStore(ingestProcessor.name, 'cursors');
  return rows.map((r) => ({
    cursorKey: r.key,
    ...pollerStateOf(JSON.parse(r.value), r.key.slice(0, r.key.indexOf(':'))),
  }));
}

/** A Retry-After still in force at `now`, or null. */
export const activePause = (state: PollerState, now: Date) =>
  state.paused && Date.parse(state.paused.until) > now.getTime() ? state.paused : null;

/** Milliseconds a poller has been stalled at `now` (0 when it reads). */
export const stalledMs = (state: PollerState, now: Date) =>
  state.stalled ? Math.max(0, now.getTime() - Date.parse(state.stalled.since)) : 0;

export type PollOutcome =
  /** A page was read and committed with its cursor. */
  | { kind: 'page'; done: boolean; counts: IngestCounts }
  /** The page could not be read: the cursor stayed, the stall is committed; try again in retryInMs. */
  | {
      kind: 'stalled';
      stalled: NonNullable<PollerState['stalled']>;
      cursor: string | null;
      retryInMs: number;
    }
  /** The host asked not to be called before `paused.until` (Retry-After): nothing was asked. */
  | { kind: 'paused'; paused: NonNullable<PollerState['paused']> };

/**
 * One page from a poller in one step: its articles, its dead letters and the cursor after it
 * commit together, so a crash re-fetches exactly the page that was not committed. A page that
 * cannot be read moves nothing: the stall (why, since when) is committed alone and the same page
 * is asked again later, for as long as it takes; only `skipPage` gives data up.
 */
export async function pollOnce(
  task: ProcessorTask,
  p: ConfiguredPoller,
  opts: { log?: Logger; now?: () => Date; signal?: AbortSignal } = {},
): Promise<PollOutcome> {
  const now = opts.now ?? (() => new Date());
  const held = { state: stateIn(task, p) };
  const { state } = held;
  const pause = activePause(state, now());
  if (pause) return { kind: 'paused', paused: pause };
  let page: Awaited<ReturnType<Poller['poll']>>;
  try {
    page = await p.poller.poll(state.cursor, keepingPauses(task, p, held, { ...opts, now }));
  } catch (e) {
    if (opts.signal?.aborted) throw e;
    return recordFailure(task, p, held.state, e, now(), opts.log);
  }
  let counts = noCounts();
  await task.stepWith(async (ctx) => {
    counts = noCounts(); // a retried step starts over
    for (const item of page.items) emitItem(ctx, item, counts);
    const next: PollerState = { poller: p.poller.name, cursor: page.cursor, stalled: null, paused: null };
    ctx.store('cursors').put(p.cursorKey, next);
  });
  if (state.stalled)
    opts.log?.info(
      { poller: p.poller.name, stalledSince: state.stalled.since, attempts: state.stalled.attempts },
      'poller reads again: the page it was stalled on is ingested',
    );
  return { kind: 'page', done: page.done, counts };
}

/** A host's Retry-After as the pause kept with the cursor, from `at` (the poll's clock). */
const pauseOf = (asked: RetryAfter, at: Date): NonNullable<PollerState['paused']> => ({
  until: new Date(at.getTime() + asked.retryAfterMs).toISOString(),
  host: new URL(asked.url).host,
  reason: `HTTP ${asked.status} with Retry-After ${Math.ceil(asked.retryAfterMs / 1000)} s`,
});

/**
 * The HttpCall of one poll or skip. A Retry-After short enough to be waited out in memory is
 * committed with the poller's state before the wait all the same: a process that dies in the
 * wait, or another one polling this source, must not call the host earlier. `held.state` follows
 * what is stored.
 */
function keepingPauses(
  task: ProcessorTask,
  p: ConfiguredPoller,
  held: { state: PollerState },
  opts: { now: () => Date; signal?: AbortSignal; log?: Logger },
): HttpCall {
  return {
    ...(opts.signal ? { signal: opts.signal } : {}),
    onRetryAfter: async (asked) => {
      const paused = pauseOf(asked, opts.now());
      held.state = await keepPause(task, p, held.state, paused);
      opts.log?.info({ poller: p.poller.name, ...paused }, 'host asked for a short pause; waiting it out');
    },
  };
}

/** Commits the poller's state with `paused`; returns the state as stored. */
async function keepPause(
  task: ProcessorTask,
  p: ConfiguredPoller,
  state: PollerState,
  paused: NonNullable<PollerState['paused']>,
): Promise<PollerState> {
  const next: PollerState = { ...state, paused };
  await task.stepWith(async (ctx) => {
    ctx.store('cursors').put(p.cursorKey, next);
  });
  return next;
}

async function recordFailure(
  task: ProcessorTask,
  p: ConfiguredPoller,
  state: PollerState,
  e: unknown,
  at: Date,
  log: Logger | undefined,
): Promise<PollOutcome> {
  const name = p.poller.name;
  const url = e instanceof UnreadablePage || e instanceof HttpError ? e.url : null;
  // Retry-After is the host's word on when to call again: kept with the cursor, so no later poll
  // in any process calls it earlier. It is not a fault of the page, so it is no stall.
  if (e instanceof HttpError && e.status !== null && e.retryAfterMs !== null) {
    const paused = pauseOf({ url: e.url, status: e.status, retryAfterMs: e.retryAfterMs }, at);
    await keepPause(task, p, state, paused);
    log?.warn({ poller: name, ...paused }, 'host asked for a pause; not calling it before then');
    return { kind: 'paused', paused };
  }
  const reason = e instanceof UnreadablePage ? e.reason : (e as Error)?.message || String(e);
  const stalled = {
    since: state.stalled?.since ?? at.toISOString(),
    reason,
    url,
    attempts: (state.stalled?.attempts ?? 0) + 1,
    alertAfterMs: p.stall.stallAlertAfterMs,
  };
  await task.stepWith(async (ctx) => {
    ctx.store('cursors').put(p.cursorKey, { ...state, stalled } satisfies PollerState);
  });
  const { stallBackoffMs, maxStallBackoffMs } = p.stall;
  const retryInMs = Math.min(maxStallBackoffMs, stallBackoffMs * 2 ** Math.min(30, stalled.attempts - 1));
  const fields = { poller: name, reason, url, since: stalled.since, attempts: stalled.attempts, retryInMs };
  if (stalledMs({ ...state, stalled }, at) >= p.stall.stallAlertAfterMs)
    log?.error(
      fields,
      'poller stalled longer than stallAlertAfterMs: nothing is skipped; see bioalchemy status',
    );
  else log?.warn(fields, 'page not readable; the cursor stays and the page is asked again');
  return { kind: 'stalled', stalled, cursor: state.cursor, retryInMs };
}

/**
 * Gives up the page a poller is at, on an operator's word (`bioalchemy poll --skip`): the cursor
 * moves past it and one dead letter says who gave up what, and why the poller was stalled.
 * `expected` is the cursor the operator saw: a poller that moved on since is not skipped.
 */
export async function skipPage(
  task: ProcessorTask,
  p: ConfiguredPoller,
  opts: { expected: string; who: string; now?: Date; signal?: AbortSignal },
): Promise<{ skipped: string; cursor: string }> {
  const held = { state: stateIn(task, p) };
  const { state } = held;
  const at = state.cursor ?? 'null';
  if (opts.expected !== at)
    throw new Error(`${p.poller.name} is at cursor ${at}, not ${opts.expected}: nothing skipped`);
  const now = () => opts.now ?? new Date();
  const pause = activePause(state, now());
  if (pause)
    throw new Error(
      `${p.poller.name}: ${pause.host} asked not to be called before ${pause.until}; a pause loses nothing, so there is nothing to skip`,
    );
  const { cursor, skipped } = await p.poller.skip(
    state.cursor,
    keepingPauses(task, p, held, { now, ...(opts.signal ? { signal: opts.signal } : {}) }),
  );
  const why = state.stalled
    ? ` (stalled since ${state.stalled.since} after ${state.stalled.attempts} attempt(s): ${state.stalled.reason})`
    : '';
  const deadLetter = apiDeadLetter(
    {
      url: state.stalled?.url ?? `poller:${p.cursorKey}`,
      code: 'skipped-by-operator',
      reason: `skipped by operator ${opts.who}: ${skipped}${why}`,
      payload: JSON.stringify({ from: state.cursor, to: cursor }),
    },
    p.poller.processor,
  );
  await task.stepWith(async (ctx) => {
    emitItem(ctx, deadLetter, noCounts());
    ctx.store('cursors').put(p.cursorKey, { ...held.state, cursor, stalled: null } satisfies PollerState);
  });
  return { skipped, cursor };
}

export interface PollSummary {
  counts: IngestCounts;
  /** Pollers left stalled or paused when a `once` pass ended. */
  stalled: {
    poller: string;
    cursorKey: string;
    cursor: string | null;
    stalled: NonNullable<PollerState['stalled']>;
  }[];
  paused: { poller: string; cursorKey: string; paused: NonNullable<PollerState['paused']> }[];
}

/**
 * Brings every poller up to date (one ingest task, so their steps never interleave). A stalled
 * poller is asked again after its backoff, a paused one once its host's pause is over, while the
 * others go on; a caught-up one after idleMs. Runs until the signal aborts; with `once`, makes
 * one pass and says which pollers it left stalled or paused.
 */
export async function pollAll(
  task: ProcessorTask,
  pollers: readonly ConfiguredPoller[],
  opts: {
    signal: AbortSignal;
    log: Logger;
    idleMs?: number;
    once?: boolean;
    now?: () => Date;
    /** Waits until the next poller is due; tests pass one that moves their clock. */
    wait?: (ms: number, signal: AbortSignal) => Promise<void>;
  },
): Promise<PollSummary> {
  const now = opts.now ?? (() => new Date());
  const summary: PollSummary = { counts: noCounts(), stalled: [], paused: [] };
  const dueAt = new Map(pollers.map((p) => [p, 0]));
  while (!opts.signal.aborted) {
    summary.stalled = [];
    summary.paused = [];
    for (const p of pollers) {
      if (dueAt.get(p)! > now().getTime()) continue;
      dueAt.set(p, await catchUp(task, p, summary, { ...opts, now }));
    }
    if (opts.once) break;
    const next = Math.min(...dueAt.values()) - now().getTime();
    if (next > 0) await (opts.wait ?? waitAbortable)(next, opts.signal);
  }
  return summary;
}

/** Pages of one poller until it is caught up, stalled or paused; returns when it is due again. */
async function catchUp(
  task: ProcessorTask,
  p: ConfiguredPoller,
  summary: PollSummary,
  opts: { signal: AbortSignal; log: Logger; idleMs?: number; now: () => Date },
): Promise<number> {
  const name = p.poller.name;
  while (!opts.signal.aborted) {
    let outcome: PollOutcome;
    try {
      outcome = await pollOnce(task, p, opts);
    } catch (e) {
      if (opts.signal.aborted) break;
      // The commit failed, not the page: the same page is asked again after a backoff.
      opts.log.warn({ err: e, poller: name }, 'poll step failed; retrying');
      return opts.now().getTime() + p.stall.stallBackoffMs;
    }
    if (outcome.kind === 'paused') {
      summary.paused.push({ poller: name, cursorKey: p.cursorKey, paused: outcome.paused });
      return Date.parse(outcome.paused.until);
    }
    if (outcome.kind === 'stalled') {
      const { stalled, cursor } = outcome;
      summary.stalled.push({ poller: name, cursorKey: p.cursorKey, cursor, stalled });
      return opts.now().getTime() + outcome.retryInMs;
    }
    addCounts(summary.counts, outcome.counts);
    opts.log.info({ poller: name, ...outcome.counts, caughtUp: outcome.done }, 'polled');
    if (outcome.done) break;
  }
  return opts.now().getTime() + (opts.idleMs ?? 15 * 60_000);
}

async function waitAbortable(ms: number, signal: AbortSignal): Promise<void> {
  await sleep(ms, undefined, { signal }).catch(() => {});
}
