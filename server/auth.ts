import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

// The one bearer-token guard every HTTP server here uses (feeder API, dashboard): bound to loopback
// a server is open; bound to any other address every route but the open ones (/healthz) needs the
// token, compared in constant time. A server off loopback without a token refuses to start.

/** 127.0.0.0/8, ::1, ::ffff:127.x and "localhost": the addresses only this machine reaches. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || h.startsWith('::ffff:127.');
  return false;
}

/** Compares in time independent of where the strings differ (digests make the lengths equal). */
export function tokenMatches(given: string, token: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(token));
}

/** The token of `Authorization: Bearer …`, else of the named cookie; null when neither is there. */
export function presentedToken(req: FastifyRequest, cookie?: string): string | null {
  const auth = req.headers.authorization;
  if (auth?.startsWith('Bearer ')) return auth.slice('Bearer '.length).trim();
  if (cookie === undefined) return null;
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name !== cookie) continue;
    try {
      return decodeURIComponent(value.join('='));
    } catch {
      return null;
    }
  }
  return null;
}

export interface GuardOptions {
  /** The address the server listens on. */
  readonly host: string;
  /** The bearer token; required when `host` is not loopback. */
  readonly token?: string | undefined;
  /** The environment variable the token comes from, named in the refusal to start. */
  readonly tokenEnv: string;
  /** What the server is, in the refusal to start and the WWW-Authenticate realm: "feeder API". */
  readonly what: string;
  /** Paths open without the token (health checks). */
  readonly open?: readonly string[];
  /** A cookie that may carry the token (the dashboard's page, whose EventSource sets no header). */
  readonly cookie?: string;
  /** Runs before the check, for a request the caller answers itself (the dashboard's ?token= link). */
  readonly before?: (req: FastifyRequest, reply: FastifyReply, token: string) => FastifyReply | undefined;
}

/** Whether requests on this address need the token; throws when they do and none is set. */
export function needsToken(opts: Pick<GuardOptions, 'host' | 'token' | 'tokenEnv' | 'what'>): boolean {
  if (isLoopback(opts.host)) return false;
  if (!opts.token)
    throw new Error(
      `the ${opts.what} on ${opts.host} (not a loopback address) needs a bearer token: set ${opts.tokenEnv}`,
    );
  return true;
}

/**
 * Adds the guard to a Fastify app (before its routes, so it also covers 404s); returns whether it
 * guards. The refusal is 401 with a reason that never echoes what was presented.
 */
export function guard(app: FastifyInstance, opts: GuardOptions): boolean {
  if (!needsToken(opts)) return false;
  const token = opts.token ?? '';
  const open = new Set(opts.open ?? ['/healthz']);
  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    const path = req.url.split('?', 1)[0]!;
    if (open.has(path)) return;
    const answered = opts.before?.(req, reply, token);
    if (answered) return answered;
    const given = presentedToken(req, opts.cookie);
    if (given !== null && tokenMatches(given, token)) return;
    return reply
      .code(401)
      .header('www-authenticate', `Bearer realm="bioalchemy ${opts.what}"`)
      .send({ error: 'unauthorized', reason: 'a bearer token is required on this address' });
  });
  return true;
}
