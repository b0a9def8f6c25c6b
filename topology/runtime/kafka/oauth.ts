import type { Secret } from '../../secret.js';

/** What the client-credentials grant needs (RFC 6749 §4.4). */
export interface ClientCredentials {
  readonly tokenEndpoint: string;
  readonly clientId: string;
  readonly clientSecret: Secret;
  readonly scope?: string;
}

/**
 * Takes a token this long before it expires, at least: a connection opened with a token that
 * expires in the next seconds would be dropped by the broker while in use.
 */
const REFRESH_BEFORE_MS = 60_000;

/**
 * OAuth 2 bearer tokens by the client-credentials grant, kept until shortly before they expire:
 * kafkajs asks for one at every connection and re-authentication, and the provider must not ask
 * the identity provider each time. librdkafka does the same itself (sasl.oauthbearer.method=oidc).
 */
export class ClientCredentialsTokens {
  private current: { value: string; expiresAt: number } | null = null;
  private pending: Promise<string> | null = null;

  constructor(
    private readonly credentials: ClientCredentials,
    private readonly fetchFn: typeof fetch = fetch,
    private readonly now: () => number = Date.now,
  ) {}

  /** A token valid for a while yet: the one held, or a new one (one request at a time). */
  token(): Promise<string> {
    if (this.current && this.now() < this.current.expiresAt - REFRESH_BEFORE_MS)
      return Promise.resolve(this.current.value);
    this.pending ??= this.fetchToken().finally(() => {
      this.pending = null;
    });
    return this.pending;
  }

  private async fetchToken(): Promise<string> {
    const c = this.credentials;
    const body = new URLSearchParams({ grant_type: 'client_credentials' });
    if (c.scope) body.set('scope', c.scope);
    const basic = Buffer.from(
      `${encodeURIComponent(c.clientId)}:${encodeURIComponent(c.clientSecret.reveal())}`,
    ).toString('base64');
    const started = this.now();
    const res = await this.fetchFn(c.tokenEndpoint, {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
      body,
      signal: AbortSignal.timeout(15_000),
    });
    // The provider's error body (error, error_description) says why; it holds no secret of ours.
    const text = await res.text();
    if (!res.ok)
      throw new Error(
        `connection.kafka.sasl.tokenEndpoint: the token endpoint answered ${res.status}: ${text.slice(0, 300)}`,
      );
    const parsed = JSON.parse(text) as { access_token?: unknown; expires_in?: unknown };
    if (typeof parsed.access_token !== 'string')
      throw new Error('connection.kafka.sasl.tokenEndpoint: the token endpoint answered no access_token');
    // RFC 6749: expires_in is recommended, not required; without it, an hour.
    const lifetimeS = typeof parsed.expires_in === 'number' ? parsed.expires_in : 3600;
    this.current = { value: parsed.access_token, expiresAt: started + lifetimeS * 1000 };
    return parsed.access_token;
  }
}
