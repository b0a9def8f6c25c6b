import { describe, expect, it } from 'vitest';
import { ClientCredentialsTokens } from '../../topology/runtime/kafka/oauth.js';
import { Secret } from '../../topology/secret.js';

const SECRET = 'client-secret-never-shown';

/** A token endpoint that counts its requests and gives tokens valid for `lifetimeS`. */
function tokenEndpoint(lifetimeS: number, status = 200) {
  const requests: { auth: string; body: string }[] = [];
  const fetchFn = (async (_url: string, init: RequestInit) => {
    requests.push({
      auth: String((init.headers as Record<string, string>).authorization),
      body: String(init.body),
    });
    const body =
      status === 200
        ? { access_token: `token-${requests.length}`, token_type: 'bearer', expires_in: lifetimeS }
        : { error: 'invalid_client' };
    return new Response(JSON.stringify(body), { status });
  }) as typeof fetch;
  return { requests, fetchFn };
}

describe('OAUTHBEARER tokens by the client-credentials grant', () => {
  const credentials = {
    tokenEndpoint: 'https://idp.example/token',
    clientId: 'bioalchemy',
    clientSecret: Secret.read({ env: 'S' }, 'connection.kafka.sasl.clientSecret', { S: SECRET }),
    scope: 'kafka',
  };

  it('asks once, keeps the token, and takes a new one a minute before it expires', async () => {
    let now = 0;
    const idp = tokenEndpoint(300);
    const tokens = new ClientCredentialsTokens(credentials, idp.fetchFn, () => now);
    expect(await Promise.all([tokens.token(), tokens.token()])).toEqual(['token-1', 'token-1']);
    expect(idp.requests).toHaveLength(1);
    expect(idp.requests[0]!.body).toBe('grant_type=client_credentials&scope=kafka');
    expect(Buffer.from(idp.requests[0]!.auth.slice('Basic '.length), 'base64').toString()).toBe(
      `bioalchemy:${SECRET}`,
    );
    now = 239_000;
    expect(await tokens.token()).toBe('token-1');
    now = 241_000;
    expect(await tokens.token()).toBe('token-2');
    expect(idp.requests).toHaveLength(2);
  });

  it('a refusal names the key and quotes the provider, never the secret', async () => {
    const tokens = new ClientCredentialsTokens(credentials, tokenEndpoint(300, 401).fetchFn);
    const err = await tokens.token().catch((e: Error) => e);
    expect((err as Error).message).toMatch(/^connection\.kafka\.sasl\.tokenEndpoint: .*401.*invalid_client/);
    expect((err as Error).message).not.toContain(SECRET);
  });
});
