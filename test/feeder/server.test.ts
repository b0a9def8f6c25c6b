import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Feeder } from '../../processors/feeder/feeder.js';
import { LeaseResponse, RunStatus } from '../../schemas/feeder.js';
import { RolloutBatch } from '../../schemas/rollout-batch.js';
import { startServer } from '../../server/feeder-api.js';
import { mix, poolItems } from './fixtures.js';

let server: Awaited<ReturnType<typeof startServer>>;
let feeder: Feeder;

beforeAll(async () => {
  feeder = Feeder.open(':memory:', { batchSize: 4, leaseMs: 60_000 });
  feeder.addItems(poolItems(1000));
  feeder.setMix(mix(1));
  server = await startServer(feeder, { host: '127.0.0.1', port: 0, bodyLimit: 64 * 1024 });
});
afterAll(async () => {
  await server.close();
  feeder.close();
});

async function post(path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe('feeder HTTP API', () => {
  it('never leases a batch or an item twice under 50 concurrent clients', async () => {
    const worldSize = 5;
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        post('/v1/lease', { run: 'many', rank: i % worldSize, worldSize }),
      ),
    );
    const batches = responses.map((r) => {
      expect(r.status).toBe(200);
      const lease = LeaseResponse.parse(r.json);
      if (lease.status !== 'leased') throw new Error(JSON.stringify(lease));
      expect(lease.batch.rank).toBe(lease.batch.index % worldSize);
      return lease;
    });
    expect(new Set(batches.map((b) => b.batch.id)).size).toBe(50);
    const slots = batches.flatMap((b) =>
      b.batch.items.map((i) => `${i.extra_info.qa_id}#${i.extra_info.copy}`),
    );
    expect(new Set(slots).size).toBe(slots.length);
    // Acking them all concurrently, each exactly once.
    const acks = await Promise.all(
      batches.map((b) => post('/v1/ack', { run: 'many', batchId: b.batch.id, leaseId: b.leaseId })),
    );
    expect(acks.every((a) => a.status === 200)).toBe(true);
    const status = RunStatus.parse(await (await fetch(`${server.url}/v1/runs/many`)).json());
    expect(status.batches).toMatchObject({ acked: 50, leased: 0 });
    expect(status.ackedItems).toBe(slots.length);
  });

  it('serves batches of superset rows that validate', async () => {
    const r = await post('/v1/lease', { run: 'rows', rank: 0, worldSize: 1, batchSize: 3 });
    const lease = LeaseResponse.parse(r.json);
    if (lease.status !== 'leased') throw new Error('no lease');
    const batch = RolloutBatch.parse(lease.batch);
    expect(batch.items).toHaveLength(3);
    const item = batch.items[0]!;
    expect(item.reward_model.ground_truth).toEqual(item.ground_truth);
    expect(item.prompt.at(-1)!.content).toContain(
      item.extra_info.kind === 'mcq' ? 'A) Mitochondria' : 'Question',
    );
  });

  it('answers bad input with a 4xx and a reason, and changes nothing', async () => {
    const lease = LeaseResponse.parse((await post('/v1/lease', { run: 'bad', rank: 0, worldSize: 2 })).json);
    if (lease.status !== 'leased') throw new Error('no lease');
    const before = await (await fetch(`${server.url}/v1/runs/bad`)).json();
    const ok = { run: 'bad', batchId: lease.batch.id, leaseId: lease.leaseId };
    for (const [path, body, status, pattern] of [
      ['/v1/lease', { run: 'bad', rank: 2, worldSize: 2 }, 400, /rank must be below worldSize/],
      ['/v1/lease', { run: 'bad', rank: 0, worldSize: 3 }, 409, /worldSize 2/],
      ['/v1/lease', { run: 'bad run!', rank: 0, worldSize: 1 }, 400, /run/],
      ['/v1/lease', '{"run": ', 400, /JSON/i],
      ['/v1/ack', { ...ok, run: 'ghost' }, 404, /no run "ghost"/],
      ['/v1/ack', { ...ok, leaseId: 'never-made' }, 409, /never made/],
      ['/v1/release', { ...ok, leaseId: 'never-made' }, 409, /never made/],
      ['/v1/release', { ...ok, rank: 1 }, 409, /belongs to rank 0/],
      ['/v1/ack', { ...ok, rewards: ['NaN', 0, 0, 0] }, 400, /finite number/],
      ['/v1/ack', { ...ok, rewards: ['Infinity', 0, 0, 0] }, 400, /finite number/],
      [
        '/v1/ack',
        `{"run":"bad","batchId":"${ok.batchId}","leaseId":"${ok.leaseId}","rewards":[NaN,0,0,0]}`,
        400,
        /bare NaN or Infinity/,
      ],
      [
        '/v1/ack',
        `{"run":"bad","batchId":"${ok.batchId}","leaseId":"${ok.leaseId}","rewards":[0,-Infinity,0,0]}`,
        400,
        /bare NaN or Infinity/,
      ],
      [
        '/v1/ack',
        `{"run":"bad","batchId":"${ok.batchId}","leaseId":"${ok.leaseId}","rewards":[1e999,0,0,0]}`,
        400,
        /finite number/,
      ],
      ['/v1/ack', { ...ok, slots: [4] }, 400, /outside/],
      ['/v1/ack', { ...ok, slots: [0.5] }, 400, /slots/],
      ['/v1/ack', { ...ok, rewards: [0] }, 400, /covers 4 slot/],
      ['/v1/ack', { ...ok, extra: 1 }, 400, /extra/],
      ['/v1/extend', { ...ok, batchId: 'bad/e0/b1000' }, 404, /no batch/],
      ['/v1/ack', { ...ok, rewards: Array(20_000).fill(0.5) }, 413, /over 65536 bytes/],
      ['/v1/reward', { kind: 'essay', ground_truth: 'x', output: 'y' }, 400, /kind/],
    ] as const) {
      const r = await post(path, body);
      expect(r.status, `${path} ${JSON.stringify(body).slice(0, 80)}`).toBe(status);
      expect(String(r.json.reason)).toMatch(pattern);
      expect(r.json.error).toBeTruthy();
      if (/finite number|bare NaN/.test(pattern.source)) expect(r.json.error).toBe('bad-reward');
    }
    expect(await (await fetch(`${server.url}/v1/runs/bad`)).json()).toEqual(before);
    expect((await fetch(`${server.url}/v1/runs/ghost`)).status).toBe(404);
    // A partial ack, then the rest: a second ack of a slot is refused.
    expect((await post('/v1/ack', { ...ok, slots: [1], rewards: [null] })).json).toMatchObject({
      remaining: 3,
    });
    const again = await post('/v1/ack', { ...ok, slots: [1] });
    expect([again.status, again.json.error]).toEqual([409, 'slot-already-acked']);
    expect((await post('/v1/ack', { ...ok, rewards: [12.5, -3, 0] })).json).toMatchObject({
      items: 3,
      rewards: 3,
    });
    const dup = await post('/v1/ack', ok);
    expect(dup.status).toBe(409);
    expect(dup.json.reason).toMatch(/already acked/);
  });

  it('scores outputs at /v1/reward, one or a batch', async () => {
    const one = await post('/v1/reward', {
      kind: 'mcq',
      ground_truth: 'C',
      options: ['a', 'b', 'c', 'd'],
      output: 'Answer: C',
    });
    expect(one.json).toMatchObject({ score: 1 });
    const many = await post('/v1/reward', {
      items: [
        { kind: 'mcq', ground_truth: 'C', options: ['a', 'b', 'c', 'd'], output: '\\boxed{B}' },
        { kind: 'free-form', ground_truth: '37 °C', output: 'Answer: 37' },
      ],
    });
    expect((many.json.scores as { score: number }[]).map((s) => s.score)).toEqual([0, 1]);
  });

  it('publishes an OpenAPI document generated from the schemas', async () => {
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
      openapi: string;
      paths: Record<
        string,
        Record<string, { requestBody?: { content: Record<string, { schema: unknown }> } }>
      >;
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/v1/lease',
        '/v1/ack',
        '/v1/release',
        '/v1/extend',
        '/v1/runs/{run}',
        '/v1/status',
        '/v1/reward',
      ]),
    );
    const lease = JSON.stringify(
      doc.paths['/v1/lease']!.post!.requestBody!.content['application/json']!.schema,
    );
    expect(lease).toContain('worldSize');
  });
});
