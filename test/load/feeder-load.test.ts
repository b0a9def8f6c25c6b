import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { driveLoad, type LoadServer, percentile, startLoadServer } from './feeder-load.js';

// The suite's short version of `npm run bench -- feeder-load`: 100 concurrent trainer clients over
// four runs leasing and acking for 8 s while items and mix versions keep arriving.
describe('feeder under 100 concurrent trainer clients', () => {
  let server: LoadServer;
  beforeAll(async () => {
    server = await startLoadServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('leases no batch twice and loses no ack, with new items and mix versions arriving', async () => {
    const r = await driveLoad({ url: server.url, clients: 100, runs: 4, seconds: 8, prefix: 'load' });
    expect(r.errors).toEqual([]);
    // Found by this test: prepare() re-opened an epoch a rank had left (UNIQUE constraint failed: batches.id).
    expect(server.errors).toEqual([]);
    expect(r.doubleLeased).toEqual([]);
    expect(r.acks).toBe(r.leases);
    expect(r.leases).toBeGreaterThan(100);
    // Every ack the clients got a 200 for is in the feeder's count, and nothing else is.
    for (const [run, items] of Object.entries(r.ackedItems)) expect(server.ackedItems(run)).toBe(items);
    expect(Object.keys(r.ackedItems)).toHaveLength(4);
    process.stdout.write(
      `feeder load: ${r.acks} round trips in ${r.seconds.toFixed(1)} s, p50 ${percentile(r.roundTrips, 0.5).toFixed(1)} ms, p99 ${percentile(r.roundTrips, 0.99).toFixed(1)} ms, ${r.waits} waits\n`,
    );
  }, 60_000);
});
