import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { guard, isLoopback, tokenMatches } from './auth.js';
import type { DashboardData, Snapshot } from './dashboard-data.js';

export { isLoopback, tokenMatches } from './auth.js';

// The dashboard's HTTP layer: the page, its script and ECharts (served from node_modules, never a
// CDN), the JSON API (/api/snapshot, /api/panels/:panel), the event stream (/api/events, one
// `snapshot` event per refresh) and Prometheus /metrics. Bound to loopback it is open; bound to any
// other address every route but /healthz needs the bearer token.

/** The windows a page may ask for, in seconds: 15 minutes to a week. */
export const WINDOWS = [900, 3600, 6 * 3600, 86_400, 7 * 86_400] as const;

const PANELS = [
  'totals',
  'topics',
  'drift',
  'rates',
  'deadLetters',
  'processors',
  'llm',
  'feeder',
  'timings',
] as const;

export interface DashboardServerOptions {
  readonly host: string;
  readonly port: number;
  /** Required when `host` is not a loopback address. */
  readonly token?: string | undefined;
  /** Named in the error when a token is missing. */
  readonly tokenEnv?: string;
  readonly refreshMs: number;
  readonly windowSeconds: number;
  readonly data: DashboardData;
  /** What /metrics exposes: this process's registry with the run's other processes' metrics. */
  readonly registry: () => Promise<Registry>;
  readonly log: Logger;
}

export interface DashboardServer {
  readonly url: string;
  /** Whether requests need the token (the address is not loopback). */
  readonly protected: boolean;
  close(): Promise<void>;
}

const COOKIE = 'bioalchemy_dashboard';

const here = (file: string) => new URL(`./dashboard/${file}`, import.meta.url);

/** Serialises snapshot gathering and keeps each window's latest for `refreshMs`. */
class Snapshots {
  private chain: Promise<unknown> = Promise.resolve();
  private readonly latest = new Map<number, { at: number; snapshot: Promise<Snapshot> }>();

  constructor(
    private readonly data: DashboardData,
    private readonly refreshMs: number,
  ) {}

  get(windowSeconds: number, fresh = false): Promise<Snapshot> {
    const cached = this.latest.get(windowSeconds);
    if (!fresh && cached && Date.now() - cached.at < this.refreshMs) return cached.snapshot;
    const snapshot = this.chain.then(() => this.data.snapshot({ windowSeconds }));
    this.chain = snapshot.catch(() => undefined);
    this.latest.set(windowSeconds, { at: Date.now(), snapshot });
    snapshot.catch(() => this.latest.delete(windowSeconds));
    return snapshot;
  }
}

/** One refresh loop per window with clients; none while no page is open. */
class EventHub {
  private readonly streams = new Map<
    number,
    { clients: Set<ServerResponse>; timer: NodeJS.Timeout | null }
  >();
  private closed = false;

  constructor(
    private readonly snapshots: Snapshots,
    private readonly refreshMs: number,
    private readonly log: Logger,
  ) {}

  add(windowSeconds: number, res: ServerResponse): void {
    let stream = this.streams.get(windowSeconds);
    if (!stream) {
      stream = { clients: new Set(), timer: null };
      this.streams.set(windowSeconds, stream);
    }
    stream.clients.add(res);
    const s = stream;
    res.on('close', () => {
      s.clients.delete(res);
      if (s.clients.size === 0) {
        if (s.timer) clearTimeout(s.timer);
        this.streams.delete(windowSeconds);
      }
    });
    // The newest snapshot at once, then one per refresh.
    void this.push(windowSeconds, [res], false);
    if (!s.timer) this.schedule(windowSeconds);
  }

  private schedule(windowSeconds: number): void {
    const stream = this.streams.get(windowSeconds);
    if (!stream || this.closed) return;
    stream.timer = setTimeout(async () => {
      const s = this.streams.get(windowSeconds);
      if (!s) return;
      await this.push(windowSeconds, [...s.clients], true);
      this.schedule(windowSeconds);
    }, this.refreshMs);
  }

  private async push(windowSeconds: number, clients: ServerResponse[], fresh: boolean): Promise<void> {
    let event: string;
    try {
      event = `event: snapshot\ndata: ${JSON.stringify(await this.snapshots.get(windowSeconds, fresh))}\n\n`;
    } catch (err) {
      this.log.warn({ err }, 'dashboard snapshot failed');
      event = `event: failure\ndata: ${JSON.stringify({ reason: (err as Error).message })}\n\n`;
    }
    for (const res of clients) if (!res.writableEnded) res.write(event);
  }

  close(): void {
    this.closed = true;
    for (const s of this.streams.values()) {
      if (s.timer) clearTimeout(s.timer);
      for (const res of s.clients) res.end();
    }
    this.streams.clear();
  }
}

function windowOf(req: FastifyRequest, fallback: number): number {
  const asked = Number((req.query as { window?: string }).window);
  return (WINDOWS as readonly number[]).includes(asked) ? asked : fallback;
}

export function buildDashboard(opts: DashboardServerOptions): { app: FastifyInstance; hub: EventHub } {
  const page = readFileSync(here('index.html'), 'utf8');
  const script = readFileSync(here('app.js'), 'utf8');
  const echarts = readFileSync(createRequire(import.meta.url).resolve('echarts/dist/echarts.min.js'));
  const snapshots = new Snapshots(opts.data, opts.refreshMs);
  const hub = new EventHub(snapshots, opts.refreshMs, opts.log);
  const fallback = (WINDOWS as readonly number[]).includes(opts.windowSeconds) ? opts.windowSeconds : 3600;

  const app = Fastify({ logger: false });
  // The shared guard (server/auth.ts): open on loopback, else the bearer token or the page's cookie.
  guard(app, {
    host: opts.host,
    token: opts.token,
    tokenEnv: opts.tokenEnv ?? 'the token variable',
    what: 'dashboard',
    cookie: COOKIE,
    before(req, reply, token) {
      const url = new URL(req.url, 'http://dashboard');
      const fromQuery = url.searchParams.get('token');
      if (
        fromQuery === null ||
        req.method !== 'GET' ||
        url.pathname !== '/' ||
        !tokenMatches(fromQuery, token)
      )
        return undefined;
      // A link with ?token= opens the page once: the token moves into a cookie the page's own
      // requests (fetch, EventSource, which cannot set headers) carry, and out of the address bar.
      url.searchParams.delete('token');
      return reply
        .header('set-cookie', `${COOKIE}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/`)
        .redirect(`${url.pathname}${url.search}`, 303);
    },
  });

  app.get('/healthz', async () => ({ ok: true }));
  app.get('/', async (_req, reply) => reply.type('text/html; charset=utf-8').send(page));
  app.get('/assets/app.js', async (_req, reply) => reply.type('text/javascript; charset=utf-8').send(script));
  app.get('/assets/echarts.min.js', async (_req, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'max-age=86400').send(echarts),
  );
  app.get('/api/snapshot', async (req) => snapshots.get(windowOf(req, fallback)));
  app.get('/api/panels/:panel', async (req, reply) => {
    const { panel } = req.params as { panel: string };
    if (!(PANELS as readonly string[]).includes(panel))
      return reply
        .code(404)
        .send({ error: 'not-found', reason: `no panel "${panel}" (${PANELS.join(', ')})` });
    const snapshot = await snapshots.get(windowOf(req, fallback));
    return { at: snapshot.at, window: snapshot.window, [panel]: snapshot[panel as (typeof PANELS)[number]] };
  });
  app.get('/api/events', (req, reply) => {
    reply.hijack();
    reply.raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    reply.raw.write(`retry: ${opts.refreshMs}\n\n`);
    hub.add(windowOf(req, fallback), reply.raw);
  });
  app.get('/metrics', async (_req, reply) => {
    const registry = await opts.registry();
    return reply.type(registry.contentType).send(await registry.metrics());
  });
  return { app, hub };
}

/** Listens on host:port; refuses a non-loopback address without a token. */
export async function startDashboard(opts: DashboardServerOptions): Promise<DashboardServer> {
  const { app, hub } = buildDashboard(opts);
  await app.listen({ host: opts.host, port: opts.port });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : opts.port;
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  return {
    url: `http://${host}:${port}`,
    protected: !isLoopback(opts.host),
    async close() {
      hub.close();
      await app.close();
    },
  };
}
