import { randomBytes } from 'node:crypto';
import { type AddressInfo, connect, createServer } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { majorVersion, openClickHouse } from '../../analytics/clickhouse.js';
import { readMigrations } from '../../analytics/migrations.js';
import { CLICKHOUSE_SERVER_URL, clickHouseServer } from '../services/clickhouse-server.js';
import { onlyWhen, storeSuite } from './store-suite.js';

// The server CI starts with deploy/services.sh. Absent server = failure, never a skip: this file
// is the only proof the HTTP backend works.
const server = clickHouseServer();
const { origin, username, admin } = server;
// Top-level await: which tests apply depends on the server, and must be known at collection.
const version = await server.version();
const queryParams = majorVersion(version) >= 19;

afterAll(() => server.close());

// Each test gets its own database, so the suite never sees another test's (or engineer's) rows.
storeSuite({
  name: `ClickHouse ${version} over HTTP`,
  backend: 'http',
  queryParams,
  fresh: () => server.freshDatabase('test'),
});

describe(`ClickHouse ${version} over HTTP, server specifics`, () => {
  it('agrees with start.sh: migrations it recorded are not applied again', async () => {
    const Ledger = z.array(z.object({ version: z.string() }));
    const ledger = async () => {
      const rs = await admin.query({
        query: 'SELECT version FROM default.schema_migrations ORDER BY version',
        format: 'JSONEachRow',
      });
      return Ledger.parse(await rs.json()).map((r) => r.version);
    };
    const byScript = await ledger();
    expect(byScript.length).toBeGreaterThan(0); // start.sh ran and migrated `default`
    const a = await openClickHouse(`${origin}/default`);
    try {
      const files = (await readMigrations()).map((m) => m.version);
      expect(a.migrationsApplied).toEqual(files.filter((v) => !byScript.includes(v)));
      expect(await ledger()).toEqual(files);
    } finally {
      await a.close();
    }
  });

  onlyWhen(!queryParams)(
    'the server itself rejects {name:Type} parameters (why some functions refuse it)',
    async () => {
      await expect(
        admin.query({ query: 'SELECT {x:String} AS x', query_params: { x: 'a' }, format: 'JSONEachRow' }),
      ).rejects.toThrow(/param_x|Syntax error/);
    },
  );

  it('sends CLICKHOUSE_PASSWORD, and never repeats it in errors', async () => {
    const saved = process.env.CLICKHOUSE_PASSWORD;
    const secret = `not-the-password-${randomBytes(4).toString('hex')}`;
    process.env.CLICKHOUSE_PASSWORD = `${saved ?? ''}${secret}`;
    try {
      const err = await openClickHouse(CLICKHOUSE_SERVER_URL).catch((e: unknown) => e as Error);
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toMatch(/password/i);
      expect((err as Error).message).not.toContain(secret);
    } finally {
      if (saved === undefined) delete process.env.CLICKHOUSE_PASSWORD;
      else process.env.CLICKHOUSE_PASSWORD = saved;
    }
  });

  it('fails with the server named when nothing listens there', async () => {
    await expect(openClickHouse('http://127.0.0.1:1/default')).rejects.toThrow(
      /127\.0\.0\.1:1.*does not answer/,
    );
  });

  it('waits for a server that refuses connections, and opens once it listens', async () => {
    // A port that refuses at first; after the first refused try, a proxy to the real server
    // listens there: the open must succeed without the caller trying again.
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const upstream = new URL(origin);
    const proxy = createServer((c) => {
      const s = connect(Number(upstream.port), upstream.hostname);
      c.pipe(s).pipe(c);
      c.on('error', () => s.destroy());
      s.on('error', () => c.destroy());
    });
    const waits: string[] = [];
    try {
      const a = await openClickHouse(`http://${encodeURIComponent(username)}@127.0.0.1:${port}/default`, {
        waitMs: 30_000,
        onWait: (err) => {
          waits.push(err.message);
          if (waits.length === 1) proxy.listen(port, '127.0.0.1');
        },
      });
      await a.close();
      expect(waits.length).toBeGreaterThanOrEqual(1);
      expect(waits[0]).toMatch(/ECONNREFUSED/);
    } finally {
      await new Promise((r) => proxy.close(r));
    }
  });

  it('gives up waiting at the deadline, naming the server', async () => {
    const waits: number[] = [];
    await expect(
      openClickHouse('http://127.0.0.1:1/default', { waitMs: 800, onWait: (_, ms) => waits.push(ms) }),
    ).rejects.toThrow(/127\.0\.0\.1:1.*does not answer/);
    expect(waits.length).toBeGreaterThanOrEqual(2);
    expect(waits.reduce((s, n) => s + n, 0)).toBeLessThanOrEqual(800);
  });
});
