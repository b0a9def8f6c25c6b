// A trainer rank for the chaos run: leases batches from the feeder, scores them at random and
// acks, for as long as it lives, through feeder restarts (connection errors are retried). Every
// ack the feeder confirmed is appended to --out as one JSON line. With --final-version V it exits
// (printing "done <epoch>") once it has acked a whole epoch cut entirely at mix version V.
import { appendFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    run: { type: 'string', default: 'chaos' },
    out: { type: 'string' },
    'batch-size': { type: 'string', default: '16' },
    'final-version': { type: 'string' },
  },
});
const url = values.url!;
const out = values.out!;
const batchSize = Number(values['batch-size']);
const finalVersion = values['final-version'] === undefined ? null : Number(values['final-version']);

interface Batch {
  id: string;
  epoch: number;
  mixVersion: number;
  items: { extra_info: { qa_id: string } }[];
}

async function post(path: string, body: unknown): Promise<{ status: number; json: unknown } | null> {
  try {
    const res = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: await res.json() };
  } catch {
    return null; // the feeder is down (killed, restarting): try again
  }
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Whether the feeder counts epoch `e` wholly acked. An epoch ends for a rank when it has no fresh
 * batch left, while a batch whose lease answer was lost is still held until it expires and comes again.
 */
async function whole(e: number): Promise<boolean> {
  try {
    const res = await fetch(`${url}/v1/runs/${encodeURIComponent(values.run!)}`);
    const status = (await res.json()) as { epochs?: { epoch: number; planned: number; acked: number }[] };
    const epoch = status.epochs?.find((x) => x.epoch === e);
    return epoch !== undefined && epoch.acked === epoch.planned;
  } catch {
    return false;
  }
}
// The first epoch this process saw may have begun before it: only later ones count as whole.
let firstEpoch: number | null = null;
// Epochs with a batch cut at another version than the final one.
const mixed = new Set<number>();

for (let step = 0; ; step++) {
  const lease = await post('/v1/lease', { run: values.run, rank: 0, worldSize: 1, batchSize });
  if (!lease || lease.status >= 500) {
    await pause(100);
    continue;
  }
  if (lease.status !== 200) throw new Error(`lease refused: ${JSON.stringify(lease.json)}`);
  const reply = lease.json as {
    status: string;
    leaseId?: string;
    batch?: Batch;
    epoch?: number;
    retryAfterMs?: number;
  };
  if (reply.status === 'wait') {
    await pause(Math.min(500, reply.retryAfterMs ?? 100));
    continue;
  }
  if (reply.status === 'epoch-end') {
    appendFileSync(out, `${JSON.stringify({ epochEnd: reply.epoch })}\n`);
    const e = reply.epoch!;
    if (finalVersion !== null && firstEpoch !== null && e > firstEpoch && !mixed.has(e) && (await whole(e))) {
      process.stdout.write(`done ${reply.epoch}\n`);
      process.exit(0);
    }
    continue;
  }
  const batch = reply.batch!;
  const rewards = batch.items.map(() => (Math.random() < 0.5 ? 1 : 0));
  const body = { run: values.run, batchId: batch.id, leaseId: reply.leaseId, rewards, step };
  // An ack with no answer may have been taken (a CI run saw the feeder commit one whose answer
  // never came): ask again until answered. "already-acked" then means this lease's ack went in,
  // since the batch was this rank's alone; "lease-expired" means it did not, and the batch comes again.
  let ack = await post('/v1/ack', body);
  const failedAt = ack ? null : Date.now();
  for (let tries = 1; !ack && tries < 50; tries++) {
    await pause(100);
    ack = await post('/v1/ack', body);
  }
  const taken =
    ack !== null && (ack.status === 200 || (ack.json as { error?: string }).error === 'already-acked');
  // An ack whose answer was lost, and what asking again found: the chaos report sets these
  // beside the moments runs were killed (issue 31: was a lost answer ever more than a kill?).
  if (failedAt !== null)
    appendFileSync(
      out,
      `${JSON.stringify({ unanswered: batch.id, failedAt, retried: ack === null ? 'no answer' : taken ? ((ack.json as { error?: string }).error ?? 'acked') : 'refused' })}\n`,
    );
  if (!ack) continue;
  if (!taken) {
    appendFileSync(out, `${JSON.stringify({ refused: batch.id, reason: ack.json })}\n`);
    continue;
  }
  appendFileSync(
    out,
    `${JSON.stringify({ batchId: batch.id, epoch: batch.epoch, mixVersion: batch.mixVersion, items: batch.items.map((i) => i.extra_info.qa_id) })}\n`,
  );
  firstEpoch ??= batch.epoch;
  if (batch.mixVersion !== finalVersion) mixed.add(batch.epoch);
}
