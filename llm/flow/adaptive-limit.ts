/**
 * How many requests one endpoint's model is sent at once, found rather than configured.
 *
 * A server has a capacity it may not state: one decoding slot (llama-cpp-python), a few
 * (llama-server --parallel, Ollama), hundreds (vLLM). Requests over it wait in the server's queue,
 * where a timeout counts their waiting as if it were the reply's, and a request abandoned there is
 * often decoded anyway (llama.cpp issues #13262, #24496): sent again, it queues twice. So the limit
 * follows what the server's latency says, as TCP Vegas and Netflix's concurrency-limits do.
 *
 * Once a round (as many replies as the limit, and at least ROUND_LEAST: about one round trip), the
 * queue the round met is estimated from its latency against the least of the rounds before:
 * `queue = limit × (1 − least / latency)`, which for a server of N slots sent L > N requests at once
 * is L − N. A round's latency is the median of its replies': one long reply is not a queue. The
 * least is kept over many rounds (ROUNDS_KEPT), as Vegas keeps its base round trip: a baseline that
 * followed the latency would take a standing queue for the server's own pace.
 * - Slow start: from 1 (or the slots the server states), +1 for each reply that met no queue, which
 *   doubles it each round trip, until one meets a queue (of the requests in flight when it was sent).
 *   A streamed reply says it sooner: its first chunk comes when the server has taken it into a slot
 *   (llama-server, llama-cpp-python, vLLM and Ollama send nothing before), so a first chunk that
 *   came before any request settled, when no slot can have been freed for it, found one free: +1
 *   then, not at its end. Slow start then fills N slots in N prompts' reading rather than log2 N
 *   whole replies, and stops one request over them: that one waits, and sends no first chunk until
 *   a reply ends. A first chunk after a request settled is judged against the least first chunk:
 *   that late, it waited for the slot freed and slow start ends; else +1 as well. A streamed reply's
 *   whole latency judges nothing in slow start: it adds how long the reply is, which varies (a
 *   short one among long ones), not the server's queue.
 * - The rounds are judged against the least of their own medians, seeded at slow start's end with
 *   the median of its replies: never against a single reply, the shortest of which is far under
 *   any round's median where replies vary in length.
 * - Then +1 a round while the queue is under a tenth of the limit (half a request under 5); when it
 *   is over a third of the limit and over one and a half requests, down to where about one request
 *   would wait; held between: the slots stay busy with a request or two waiting for the next free
 *   one. The third is for a busy client: its own loop's delays read as a queue of a few percent.
 * - It is raised only by replies to requests sent while most of it was used (USED): a pipeline
 *   with three calls to make says nothing of whether the server would take ten.
 * - A timeout or an overload answer (429, 503) halves it at once, once a round (the requests sent
 *   before a decrease do not decrease it again).
 * Its bound is `concurrency` (config): what the user allows, never what is assumed of the server.
 */
export class AdaptiveLimit {
  private limit = 1;
  private slowStart = true;
  private inFlight = 0;
  private readonly waiters: (() => void)[] = [];
  /** The latencies of recent rounds: the least is the server's without a queue. */
  private readonly rounds = new Recent(ROUNDS_KEPT);
  /**
   * Slow start's replies, each judged alone. Kept apart from the rounds: the least of single
   * replies is far under any round's median where latencies vary (a short reply among long ones),
   * and a round judged against it would read that gap as a queue.
   */
  private readonly replies = new Recent(ROUNDS_KEPT);
  /** Recent streamed replies' first chunks: the least is a prompt's reading without a queue. */
  private readonly firstChunks = new Recent(ROUNDS_KEPT);
  /** Permits handed out, numbered: a round counts the replies to requests sent since it began. */
  private handedOut = 0;
  /** Requests settled (answered, failed, given up): each may have freed one of the server's slots. */
  private settled = 0;
  private round = { from: 1, latencies: [] as number[], used: false };
  /** Replies that met a queue over the bound, timeouts and overloads: each lowered the limit. */
  queueingSeen = 0;
  stated: number | undefined;
  /** The server ends the stream in progress when another request arrives: one request at a time. */
  oneAtATime = false;

  constructor(private readonly max: number) {
    this.limit = Math.min(1, max);
  }

  /**
   * The capacity the server states of itself (llama-server's total_slots): where the limit starts,
   * and its bound, since requests over a server's slots only wait in its queue.
   */
  state(slots: number): void {
    this.stated = slots;
    this.limit = this.bound;
  }

  /**
   * The limit an earlier run found for this server: it starts there, past slow start (the ramp
   * from 1 was that run's), and goes on moving with the latency as ever.
   */
  resume(limit: number): void {
    this.limit = Math.max(1, Math.min(limit, this.bound));
    this.slowStart = false;
  }

  /**
   * The server takes one request at a time whatever it states: another arriving ends the one in
   * progress (llama-cpp-python's interrupt_requests). The limit and its bound are 1 from now on;
   * requests in flight finish, and the next waits for all of them.
   */
  toOneAtATime(): void {
    this.oneAtATime = true;
    this.limit = 1;
    if (this.slowStart) this.endSlowStart();
  }

  get current(): number {
    return this.limit;
  }

  get bound(): number {
    return this.oneAtATime ? 1 : Math.min(this.max, this.stated ?? this.max);
  }

  get sending(): number {
    return this.inFlight;
  }

  /** Waits for room under the limit (first come, first served). */
  async acquire(): Promise<Permit> {
    if (this.inFlight < this.limit && this.waiters.length === 0) this.inFlight++;
    else await new Promise<void>((resolve) => this.waiters.push(resolve));
    const number = ++this.handedOut;
    const sentWith = this.inFlight;
    const settledBefore = this.settled;
    let released = false;
    let startSeen = false;
    const release = () => {
      if (released) return;
      released = true;
      this.inFlight--;
      this.settled++;
      this.wake();
    };
    // Used: as many in flight when it was sent, or now (the first of a burst goes out alone).
    const used = () => Math.max(sentWith, this.inFlight) >= this.limit * USED;
    return {
      started: (firstChunkMs) => {
        if (startSeen) return;
        startSeen = true;
        this.firstChunks.add(Math.max(firstChunkMs, 1e-3));
        if (!this.slowStart || number < this.round.from) return;
        // No request settled since this one was sent: no slot was freed for it, so it had one
        // free. Else its first chunk against the least says whether it waited for the one freed.
        const waited =
          this.settled !== settledBefore &&
          queueMet(sentWith, firstChunkMs, this.firstChunks.least()) >= SLOW_START_QUEUE;
        if (waited) this.endSlowStart();
        else if (used()) this.raise(this.limit + 1);
      },
      answered: (latencyMs) => {
        if (number >= this.round.from) this.answered(latencyMs, sentWith, used(), startSeen);
        release();
      },
      overloaded: () => {
        if (number >= this.round.from) this.lower(Math.floor(this.limit / 2));
        release();
      },
      release,
    };
  }

  private answered(latencyMs: number, sentWith: number, used: boolean, streamed: boolean): void {
    this.round.latencies.push(latencyMs);
    // A limit is raised only where it was used: a caller with fewer calls to make than the limit
    // says nothing of whether the server takes more (Netflix's limiters' rule, "app-limited").
    if (used) this.round.used = true;
    if (this.slowStart) {
      // A streamed reply was judged by its first chunk: its whole latency adds how long it is, which
      // varies with the reply (a short one among long ones), not with the server's queue.
      if (streamed) {
        this.replies.add(Math.max(latencyMs, 1e-3));
        return;
      }
      // Each reply is a round of its own, judged by the requests in flight when it was sent: +1 a
      // reply that met no queue doubles the limit a round trip; one that met a queue ends it.
      const queue = this.replies.size() ? queueMet(sentWith, latencyMs, this.replies.least()) : 0;
      if (queue >= SLOW_START_QUEUE) this.endSlowStart();
      else {
        this.replies.add(Math.max(latencyMs, 1e-3));
        if (used) this.raise(this.limit + 1);
      }
      return;
    }
    if (this.round.latencies.length < Math.max(this.limit, ROUND_LEAST)) return;
    const latency = Math.max(upperMedian(this.round.latencies), 1e-3);
    this.rounds.add(latency);
    const queue = queueMet(this.limit, latency, this.rounds.least());
    if (queue > Math.max(1.5, this.limit / 3)) this.lower(Math.round(this.limit - queue + 1));
    else if (queue < Math.max(this.limit / 10, this.limit < 5 ? 0.5 : 0) && this.round.used)
      this.raise(this.limit + 1);
    else this.nextRound();
  }

  private raise(to: number): void {
    this.limit = Math.min(this.bound, to);
    // In slow start the replies to requests sent before still count: each is one more round trip.
    if (this.slowStart) this.round.latencies = [];
    else this.nextRound();
    this.wake();
  }

  /**
   * The rounds after slow start are judged against the least of their medians, seeded with the
   * median of slow start's replies: what the server answers in without a queue, the replies that
   * met one aside (or a standing queue would be taken for its pace).
   */
  private endSlowStart(): void {
    this.slowStart = false;
    if (this.replies.size()) this.rounds.add(this.replies.median());
    this.nextRound();
  }

  private lower(to: number): void {
    this.queueingSeen++;
    if (this.slowStart) this.endSlowStart();
    this.limit = Math.max(1, Math.min(this.limit - 1, to));
    this.nextRound();
  }

  /** A round counts only requests sent under the limit it judges. */
  private nextRound(): void {
    this.round = { from: this.handedOut + 1, latencies: [], used: false };
  }

  private wake(): void {
    while (this.waiters.length > 0 && this.inFlight < this.limit) {
      this.inFlight++;
      this.waiters.shift()!();
    }
  }
}

/** One request's room under the limit; exactly one of its methods but `started` settles it. */
export interface Permit {
  /**
   * The reply began (its first streamed chunk): the server took the request into a slot. Said
   * before the reply ends, so slow start grows by it rather than by whole replies.
   */
  started(firstChunkMs: number): void;
  /** The server answered (a reply, or a refusal of this input) in latencyMs. */
  answered(latencyMs: number): void;
  /** A timeout, a 429 or a 503: the server has more than it can take. */
  overloaded(): void;
  /** Neither says anything of the server's queue (the process is stopping, a connection refused). */
  release(): void;
}

/**
 * The queue one reply must have met to end slow start: most of a request (two in flight on one
 * slot meet one), not the few percent a busy client's own loop adds.
 */
const SLOW_START_QUEUE = 0.75;
/** The share of the limit in flight at a request's sending for its reply to raise the limit. */
const USED = 0.75;
/**
 * Latency a client adds itself: a busy event loop reads a reply late by up to tens of milliseconds,
 * and against a server that answers in one (a test server, a cache) that would read as a queue and
 * starve the run. A model server's queue adds at least one reply's time: seconds.
 */
const CLIENT_DELAY_MS = 100;

/**
 * The requests waiting at the server that `inFlight` requests sent at once met, from their
 * latency against the least: L × (1 − least / latency) for L over N slots is L − N. What the
 * client's own delay may add is not counted.
 */
function queueMet(inFlight: number, latencyMs: number, leastMs: number): number {
  const added = Math.max(0, latencyMs - leastMs - CLIENT_DELAY_MS);
  return (inFlight * added) / Math.max(latencyMs, 1e-3);
}

/** A round has at least this many replies: a median of one is one reply. */
const ROUND_LEAST = 4;
/**
 * Rounds remembered for the least latency: long enough that a standing queue is not taken for the
 * server's pace, short enough to follow a change of prompts within hours. A lowered limit (a
 * timeout, an overload) measures it again.
 */
const ROUNDS_KEPT = 256;

/**
 * The median, the upper of the two middle values of an even count: requests sent together at a
 * raise from N to 2N on N slots come back half at once and half a reply later, and that round met
 * a queue.
 */
function upperMedian(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1]!;
}

/** The last `capacity` values, and the least and the median of them. */
class Recent {
  private readonly values: number[] = [];
  private next = 0;

  constructor(private readonly capacity: number) {}

  add(value: number): void {
    if (this.values.length < this.capacity) this.values.push(value);
    else this.values[this.next] = value;
    this.next = (this.next + 1) % this.capacity;
  }

  least(): number {
    return Math.min(...this.values);
  }

  median(): number {
    return upperMedian(this.values);
  }

  size(): number {
    return this.values.length;
  }
}
