import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Feeder } from '../../processors/feeder/feeder.js';
import { ItemDifficulty, ItemDifficultyPage, LeaseResponse } from '../../schemas/feeder.js';
import { openApiDocument, startServer } from '../../server/feeder-api.js';
import { difficultyCounters } from '../../server/feeder-metrics.js';
import { feederWith } from './setup.js';

let server: Awaited<ReturnType<typeof startServer>>;
let feeder: Feeder;

beforeAll(async () => {
  feeder = feederWith(300, {
    batchSize: 4,
    leaseMs: 60_000,
    difficulty: {
      bandPass: { floor: 0.1, ceiling: 0.9, minRollouts: 4, cooldownSteps: 5, exploreShare: 0 },
    },
  });
  server = await startServer(feeder, { host: '127.0.0.1', port: 0, bodyLimit: 64 * 1024 });
});
afterAll(async () => {
  await server.close();
  feeder.close();
});

async function call(method: 'GET' | 'POST', path: string, body?: unknown) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    ...(body === undefined
      ? {}
      : {
          headers: { 'content-type': 'application/json' },
          body: typeof body === 'string' ? body : JSON.stringify(body),
        }),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

async function lease(run: string) {
  const r = LeaseResponse.parse((await call('POST', '/v1/lease', { run, rank: 0, worldSize: 1 })).json);
  if (r.status !== 'leased') throw new Error(`no lease: ${JSON.stringify(r)}`);
  return r;
}

describe('difficulty over HTTP', () => {
  it.each([
    ['a count other than its rewards', [{ count: 3, rewards: [1, 0] }], 'rollout-count-mismatch'],
    ['a reward sent as "NaN"', [{ count: 2, rewards: [1, 'NaN'] }], 'bad-rollout-reward'],
    ['a mean of 1e999 (Infinity)', '[{"count":2,"mean":1e999}]', 'bad-rollout-reward'],
    ['a count of 0', [{ count: 0, mean: 1 }], 'bad-rollout'],
    ['rollouts with neither rewards nor mean', [{ count: 2 }], 'bad-rollout'],
  ] as const)(
    'refuses an ack with %s (4xx, reason code) and changes nothing',
    async (_name, rollouts, code) => {
      const run = `bad-${code}-${String(_name).length}`;
      const l = await lease(run);
      const slot = l.slots[0]!;
      const body =
        typeof rollouts === 'string'
          ? `{"run":"${run}","batchId":"${l.batch.id}","leaseId":"${l.leaseId}","slots":[${slot}],"rollouts":${rollouts}}`
          : { run, batchId: l.batch.id, leaseId: l.leaseId, slots: [slot], rollouts };
      const r = await call('POST', '/v1/ack', body);
      expect(r.status).toBe(400);
      expect(r.json.error).toBe(code);
      const page = ItemDifficultyPage.parse((await call('GET', `/v1/runs/${run}/items`)).json);
      expect(page.items).toEqual([]);
      const ok = await call('POST', '/v1/ack', {
        run,
        batchId: l.batch.id,
        leaseId: l.leaseId,
        slots: [slot],
        rollouts: [{ count: 2, rewards: [1, 0] }],
      });
      expect(ok.status).toBe(200);
    },
  );

  it('serves an item record and a paged list, 404 for an unknown run or item', async () => {
    const l = await lease('rec');
    const id = l.batch.items[0]!.extra_info.qa_id;
    const ack = await call('POST', '/v1/ack', {
      run: 'rec',
      batchId: l.batch.id,
      leaseId: l.leaseId,
      step: 3,
      rollouts: l.batch.items.map(() => ({ count: 5, mean: 1 })),
    });
    expect(ack.json).toMatchObject({ items: l.batch.items.length, rewards: l.batch.items.length });
    const rec = ItemDifficulty.parse((await call('GET', `/v1/runs/rec/items/${id}`)).json);
    expect(rec).toMatchObject({
      rollouts: 5,
      passRate: 1,
      step: 3,
      aside: true,
      asideUntil: 8,
      flatGroups: 1,
    });
    const first = ItemDifficultyPage.parse((await call('GET', '/v1/runs/rec/items?limit=2')).json);
    expect(first.items.length).toBe(2);
    const rest = ItemDifficultyPage.parse(
      (await call('GET', `/v1/runs/rec/items?after=${first.next}&limit=100`)).json,
    );
    expect([...first.items, ...rest.items].map((i) => i.id).sort()).toEqual(
      [...new Set(l.batch.items.map((i) => i.extra_info.qa_id))].sort(),
    );
    expect((await call('GET', '/v1/runs/nope/items')).json.error).toBe('unknown-run');
    expect((await call('GET', '/v1/runs/rec/items/nope')).status).toBe(404);
    expect((await call('GET', '/v1/runs/rec/items?limit=0')).json.error).toBe('bad-limit');
    const registry = new Registry();
    difficultyCounters(registry, feeder);
    const text = await registry.metrics();
    expect(text).toContain(`bioalchemy_feeder_items_set_aside_total{run="rec"} ${l.batch.items.length}`);
    expect(text).toContain(`bioalchemy_feeder_flat_groups_total{run="rec"} ${l.batch.items.length}`);
    expect(text).toContain(`bioalchemy_feeder_rollouts_total{run="rec"} ${5 * l.batch.items.length}`);
    // No set-aside item was cut into a batch: the counter says nothing for the run yet.
    expect(text).toContain('# TYPE bioalchemy_feeder_set_aside_served_total counter');
    expect(text).not.toContain('bioalchemy_feeder_set_aside_served_total{run="rec"}');
    const doc = openApiDocument() as { paths: Record<string, { get: { parameters: { name: string }[] } }> };
    expect(doc.paths['/v1/runs/{run}/items/{id}']!.get.parameters.map((p) => p.name)).toEqual(['run', 'id']);
  });
});
