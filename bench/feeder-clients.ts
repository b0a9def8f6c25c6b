// The clients of `npm run bench -- feeder`, in a process of their own so that their JSON work
// does not share the server's event loop:
//   node --import tsx bench/feeder-clients.ts URL CLIENTS ROUNDS RUN BATCH
// Each client is one rank of RUN (world size CLIENTS): lease a batch, ack it with one reward per
// slot, again, until ROUNDS round trips are done in all. A round trip is timed from its first
// lease request: an epoch's end (or a wait) answered on the way is part of it. Prints
// {ms: [...], seconds, epochEnds} as JSON.
const [url, clientsArg, roundsArg, run, batchArg] = process.argv.slice(2);
const clients = Number(clientsArg);
const batchSize = Number(batchArg);
let left = Number(roundsArg);
const ms: number[] = [];
let epochEnds = 0;

async function post(path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status !== 200) throw new Error(`${path} ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

async function client(rank: number): Promise<void> {
  while (left-- > 0) {
    const t = performance.now();
    let lease = await post('/v1/lease', { run, rank, worldSize: clients, batchSize });
    while (lease.status !== 'leased') {
      if (lease.status === 'epoch-end') epochEnds++;
      else await new Promise((r) => setTimeout(r, Number(lease.retryAfterMs)));
      lease = await post('/v1/lease', { run, rank, worldSize: clients, batchSize });
    }
    const batch = lease.batch as { id: string; items: unknown[] };
    await post('/v1/ack', {
      run,
      batchId: batch.id,
      leaseId: lease.leaseId,
      rank,
      slots: lease.slots,
      rewards: batch.items.map((_, i) => i % 3),
    });
    ms.push(performance.now() - t);
  }
}

const t0 = performance.now();
await Promise.all(Array.from({ length: clients }, (_, rank) => client(rank)));
process.stdout.write(`${JSON.stringify({ ms, seconds: (performance.now() - t0) / 1000, epochEnds })}\n`);
