import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import { Feeder } from '../processors/feeder/feeder.js';
import { FeederError } from '../processors/feeder/feeder-error.js';
import type { RewardVerifier } from '../processors/reward-verifier.js';
import { score } from '../reward/index.js';
import { formatIssues } from '../schemas/config.js';
import {
  AckRequest,
  AckResponse,
  ApiError,
  ExtendRequest,
  ExtendResponse,
  FeederStatus,
  ItemDifficulty,
  ItemDifficultyPage,
  LeaseRequest,
  LeaseResponse,
  ReleaseRequest,
  ReleaseResponse,
  RewardBatchRequest,
  RewardBatchResponse,
  RewardGroupRequest,
  RewardRequestItem,
  RewardResult,
  RunStatus,
  type ServerConfig,
} from '../schemas/feeder.js';
import { guard } from './auth.js';
import { difficultyCounters, instrumentFeeder } from './feeder-metrics.js';

// Thin handlers: each parses its body with the zod schema the OpenAPI document is generated
// from, calls one Feeder method or the reward, and maps a FeederError to its status. A refused
// request changes nothing (the Feeder validates before it writes, in one transaction).

interface Route {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly summary: string;
  readonly body?: z.ZodType;
  readonly response: z.ZodType;
}

const RewardBody = z.union([RewardRequestItem, RewardBatchRequest]);
const RewardReply = z.union([RewardResult, RewardBatchResponse]);

export const ROUTES: readonly Route[] = [
  {
    method: 'POST',
    path: '/v1/lease',
    summary: 'lease the next batch of a rank',
    body: LeaseRequest,
    response: LeaseResponse,
  },
  {
    method: 'POST',
    path: '/v1/ack',
    summary: 'ack slots of a leased batch (all, or a subset), with optional per-slot rewards',
    body: AckRequest,
    response: AckResponse,
  },
  {
    method: 'POST',
    path: '/v1/release',
    summary: "give a leased batch's unacked slots back untrained: the rank's next lease gets them first",
    body: ReleaseRequest,
    response: ReleaseResponse,
  },
  {
    method: 'POST',
    path: '/v1/extend',
    summary: 'extend a lease',
    body: ExtendRequest,
    response: ExtendResponse,
  },
  {
    method: 'GET',
    path: '/v1/runs/{run}',
    summary: "a run's epochs, batches and ranks",
    response: RunStatus,
  },
  {
    method: 'GET',
    path: '/v1/runs/{run}/items',
    summary: "a page of the run's item difficulty records by id (`after`, `limit` up to 1000)",
    response: ItemDifficultyPage,
  },
  {
    method: 'GET',
    path: '/v1/runs/{run}/items/{id}',
    summary: "one item's difficulty record in the run: rollouts, rewards, weighted pass rate, set aside",
    response: ItemDifficulty,
  },
  {
    method: 'GET',
    path: '/v1/status',
    summary: 'the mix version, the pool and the runs',
    response: FeederStatus,
  },
  {
    method: 'POST',
    path: '/v1/reward',
    summary: 'the verifiable reward of one output, or of {items}',
    body: RewardBody,
    response: RewardReply,
  },
  {
    method: 'POST',
    path: '/v1/reward/batch',
    summary: "a GRPO group's rewards: many outputs for one reference (identical ones cost one verifier call)",
    body: RewardGroupRequest,
    response: RewardBatchResponse,
  },
];

/** The OpenAPI 3.1 document, generated from the same zod schemas the handlers parse with. */
export function openApiDocument(): Record<string, unknown> {
  const schema = (s: z.ZodType, io: 'input' | 'output') => z.toJSONSchema(s, { io, target: 'draft-2020-12' });
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of ROUTES) {
    paths[r.path] ??= {};
    paths[r.path]![r.method.toLowerCase()] = {
      summary: r.summary,
      ...(r.path.includes('{run}')
        ? {
            parameters: ['run', 'id']
              .filter((name) => r.path.includes(`{${name}}`))
              .map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
          }
        : {}),
      ...(r.body
        ? {
            requestBody: {
              required: true,
              content: { 'application/json': { schema: schema(r.body, 'input') } },
            },
          }
        : {}),
      responses: {
        200: { description: 'ok', content: { 'application/json': { schema: schema(r.response, 'output') } } },
        '4XX': {
          description: 'refused, with a reason',
          content: { 'application/json': { schema: schema(ApiError, 'output') } },
        },
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'BioAlchemy feeder',
      version: '1',
      description: 'leased rollout batches, acks with rewards, the verifiable reward',
    },
    paths,
  };
}

class BadRequest extends Error {
  constructor(
    message: string,
    readonly code = 'bad-request',
  ) {
    super(message);
  }
}

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  // A reward that is no finite number (NaN or Infinity sent as a string, 1e999) has its own code:
  // it is what a trainer's reward function gets wrong.
  const reward = r.error.issues.some((i) => i.path[0] === 'rewards');
  // A rollout's reward or mean that is no number is the same mistake, per rollout.
  const rollout = r.error.issues.find((i) => i.path[0] === 'rollouts');
  const rolloutReward = rollout && (rollout.path.includes('rewards') || rollout.path.includes('mean'));
  throw new BadRequest(
    reward || rolloutReward
      ? `${formatIssues(r.error)} (a reward is a finite number, or null for none; JSON has no NaN or Infinity)`
      : formatIssues(r.error),
    reward ? 'bad-reward' : rolloutReward ? 'bad-rollout-reward' : rollout ? 'bad-rollout' : 'bad-request',
  );
}

/** A bare NaN or Infinity token where a JSON value belongs (Python's json.dumps writes them). */
const NON_FINITE_TOKEN = /[[,:]\s*-?(NaN|Infinity)\s*[\],}]/;

/**
 * The feeder's Fastify app. Bound to loopback (or with no host given) it is open; on any other
 * address every route but /healthz needs the bearer token (server/auth.ts, the dashboard's guard).
 */
export function buildServer(
  feeder: Feeder,
  opts: Pick<ServerConfig, 'bodyLimit'> &
    Partial<Pick<ServerConfig, 'host' | 'tokenEnv'>> & {
      token?: string;
      /** reward.verifier: asked about outputs the rules leave undecided; unset, the rules alone. */
      verifier?: RewardVerifier;
    },
): FastifyInstance {
  const app = Fastify({ bodyLimit: opts.bodyLimit, logger: false });
  guard(app, {
    host: opts.host ?? '127.0.0.1',
    token: opts.token,
    tokenEnv: opts.tokenEnv ?? 'BIOALCHEMY_FEEDER_TOKEN',
    what: 'feeder API',
  });
  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, _req, reply: FastifyReply) => {
    if (err instanceof FeederError)
      return reply.code(err.status).send({ error: err.code, reason: err.message });
    if (err instanceof BadRequest) return reply.code(400).send({ error: err.code, reason: err.message });
    if (err.statusCode === 413)
      return reply.code(413).send({ error: 'too-large', reason: `the body is over ${opts.bodyLimit} bytes` });
    if (err.statusCode && err.statusCode < 500)
      return reply.code(err.statusCode).send({ error: err.code ?? 'bad-request', reason: err.message });
    return reply.code(500).send({ error: 'internal', reason: err.message });
  });
  app.setNotFoundHandler((req, reply) =>
    reply
      .code(404)
      .send({ error: 'not-found', reason: `no route ${req.method} ${req.url} (see /openapi.json)` }),
  );
  app.post('/v1/lease', async (req, reply) => {
    const { json } = feeder.leaseRaw(parse(LeaseRequest, req.body));
    return reply.type('application/json').send(json);
  });
  // Fastify's own JSON parser, but a body that is not JSON only because of a bare NaN or Infinity
  // is refused as the bad reward it is, not as a syntax error at some position.
  const json = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) =>
    json(req, body as string, (err: Error | null, value?: unknown) => {
      if (err && NON_FINITE_TOKEN.test(body as string))
        return done(
          new BadRequest(
            'the body holds a bare NaN or Infinity, which JSON has no way to write: a reward is a finite number, or null for none',
            'bad-reward',
          ),
        );
      done(err, value);
    }),
  );
  app.post('/v1/ack', async (req) => feeder.ack(parse(AckRequest, req.body)));
  app.post('/v1/release', async (req) => feeder.release(parse(ReleaseRequest, req.body)));
  app.post('/v1/extend', async (req) => feeder.extend(parse(ExtendRequest, req.body)));
  app.get<{ Params: { run: string } }>('/v1/runs/:run', async (req) => feeder.runStatus(req.params.run));
  app.get<{ Params: { run: string }; Querystring: { after?: string; limit?: string } }>(
    '/v1/runs/:run/items',
    async (req) => {
      const limit = req.query.limit === undefined ? 100 : Number(req.query.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
        throw new BadRequest(`limit = ${req.query.limit}: an integer from 1 to 1000`, 'bad-limit');
      return feeder.itemDifficulties(req.params.run, req.query.after ?? '', limit);
    },
  );
  app.get<{ Params: { run: string; id: string } }>('/v1/runs/:run/items/:id', async (req) =>
    feeder.itemDifficulty(req.params.run, req.params.id),
  );
  app.get('/v1/status', async () => feeder.status());
  const verifier = opts.verifier;
  app.post('/v1/reward', async (req) => {
    // Parsed by its shape, so a refusal names the field rather than "no union member matched".
    if (req.body && typeof req.body === 'object' && 'items' in req.body) {
      const { items } = parse(RewardBatchRequest, req.body);
      return { scores: verifier ? await Promise.all(items.map((i) => verifier.score(i))) : items.map(score) };
    }
    const item = parse(RewardRequestItem, req.body);
    return verifier ? verifier.score(item) : score(item);
  });
  app.post('/v1/reward/batch', async (req) => {
    const group = parse(RewardGroupRequest, req.body);
    if (verifier) return { scores: await verifier.scoreGroup(group) };
    const { outputs, ...item } = group;
    return { scores: outputs.map((output) => score({ ...item, output })) };
  });
  app.get('/openapi.json', async () => openApiDocument());
  app.get('/healthz', async () => ({ ok: true }));
  return app;
}

/**
 * Serves the feeder API; resolves to the server and the address it listens on. With a registry,
 * its request latency and event-loop delay histograms go there (server/feeder-metrics.ts).
 */
export async function startServer(
  feeder: Feeder,
  config: Pick<ServerConfig, 'host' | 'port' | 'bodyLimit'> &
    Partial<Pick<ServerConfig, 'tokenEnv'>> & { token?: string; verifier?: RewardVerifier },
  registry?: Registry,
): Promise<{ app: FastifyInstance; url: string; close(): Promise<void> }> {
  const app = buildServer(feeder, config);
  const stopSampling = registry ? instrumentFeeder(app, registry) : () => {};
  if (registry) difficultyCounters(registry, feeder);
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (e) {
    stopSampling();
    throw new Error(`feeder API not started on ${config.host}:${config.port}: ${(e as Error).message}`);
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  return {
    app,
    url: `http://${config.host}:${port}`,
    close: () => {
      stopSampling();
      return app.close();
    },
  };
}

export { Feeder };
