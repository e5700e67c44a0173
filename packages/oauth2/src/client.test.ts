import { createMemoryLogger } from '@agent/log';
import { afterEach, describe, expect, it } from 'vitest';
import { fetchHttp, startProtectedApi } from '../test/fetch-http.js';
import { createRefreshTokenClient, OAuth2Error, type RefreshTokenClient } from './index.js';
import { startFakeTokenEndpoint, type FakeTokenEndpoint } from './testing.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.toReversed()) await c();
  cleanup = [];
});

async function setup(opts: { expiresIn?: number } = {}) {
  const ep = await startFakeTokenEndpoint(opts);
  cleanup.push(() => ep.close());
  let now = Date.parse('2026-01-01T00:00:00Z');
  const logger = createMemoryLogger();
  const http = fetchHttp();
  const client = createRefreshTokenClient({
    account: {
      clientId: ep.clientId,
      clientSecret: ep.clientSecret,
      refreshToken: ep.refreshToken,
      tokenUrl: ep.tokenUrl,
      allowPrivateNetworks: true,
    },
    http,
    logger,
    now: () => now,
    label: 'work',
  });
  cleanup.push(() => client.close());
  return { ep, client, logger, http, advance: (ms: number) => void (now += ms) };
}

async function failure(p: Promise<unknown>): Promise<OAuth2Error> {
  return p.then(
    () => {
      throw new Error('expected a failure');
    },
    (e: unknown) => e as OAuth2Error,
  );
}

function expectNoSecrets(ep: FakeTokenEndpoint, text: string) {
  expect(text).not.toContain(ep.refreshToken);
  expect(text).not.toContain(ep.clientSecret);
  for (const t of ep.issued) expect(text).not.toContain(t);
}

describe('access tokens', () => {
  it('refreshes once, caches the token, and refreshes again about 60 s before expiry', async () => {
    const { ep, client, advance } = await setup({ expiresIn: 3600 });
    const a = await client.accessToken();
    expect(ep.isValid(a)).toBe(true);
    expect(await client.accessToken()).toBe(a);
    advance(3600_000 - 61_000);
    expect(await client.accessToken()).toBe(a);
    expect(ep.requests).toBe(1);
    advance(2_000); // now 59 s before expiry
    const b = await client.accessToken();
    expect(b).not.toBe(a);
    expect(ep.requests).toBe(2);
    expect(client.refreshCount()).toBe(2);
  });

  it('is single-flight: concurrent callers share one token request', async () => {
    const { ep, client } = await setup();
    ep.hold();
    const all = Promise.all(Array.from({ length: 6 }, () => client.accessToken()));
    await new Promise((r) => setTimeout(r, 50));
    ep.release();
    const tokens = await all;
    expect(new Set(tokens).size).toBe(1);
    expect(ep.requests).toBe(1);
  });

  it('a caller whose signal aborts stops waiting, but the shared refresh still serves the others', async () => {
    const { ep, client } = await setup();
    ep.hold();
    const ac = new AbortController();
    const aborted = client.accessToken(ac.signal);
    const other = client.accessToken();
    await new Promise((r) => setTimeout(r, 30));
    ac.abort(new Error('tick aborted'));
    await expect(aborted).rejects.toThrow('tick aborted');
    ep.release();
    expect(ep.isValid(await other)).toBe(true);
    expect(ep.requests).toBe(1);
  });

  it('does not cache a failure: the next call asks again', async () => {
    const { ep, client } = await setup();
    ep.setMode('server_error');
    await failure(client.accessToken());
    ep.setMode('ok');
    expect(ep.isValid(await client.accessToken())).toBe(true);
    expect(ep.requests).toBe(2);
  });
});

describe('token endpoint errors', () => {
  it('invalid_grant (revoked or expired refresh token) is Permanent, and the echoed token is scrubbed', async () => {
    const { ep, client, logger } = await setup();
    ep.revoke();
    const err = await failure(client.accessToken());
    expect(err).toBeInstanceOf(OAuth2Error);
    expect(err).toMatchObject({
      code: 'OAUTH2_INVALID_GRANT',
      errorClass: 'permanent',
      status: 400,
      oauthError: 'invalid_grant',
    });
    expect(err.message).toMatch(/authorize the account again/);
    expect(err.message).toMatch(/expired or revoked/);
    expectNoSecrets(ep, err.message);
    expectNoSecrets(ep, logger.lines.join('\n'));
    expect(logger.find('oauth2 token refresh failed')[0]!.fields).toMatchObject({
      code: 'OAUTH2_INVALID_GRANT',
      oauth2: 'work',
    });
  });

  it.each([
    ['invalid_client', 'OAUTH2_INVALID_CLIENT', 401],
    ['unauthorized_client', 'OAUTH2_UNAUTHORIZED_CLIENT', 400],
    ['invalid_scope', 'OAUTH2_TOKEN_REJECTED', 400],
  ] as const)('%s is Permanent (%s)', async (mode, code, status) => {
    const { ep, client } = await setup();
    ep.setMode(mode);
    const err = await failure(client.accessToken());
    expect(err).toMatchObject({ code, errorClass: 'permanent', status });
    expectNoSecrets(ep, err.message);
  });

  it('a wrong client secret gets invalid_client from the endpoint', async () => {
    const ep = await startFakeTokenEndpoint();
    cleanup.push(() => ep.close());
    const client = createRefreshTokenClient({
      account: {
        clientId: ep.clientId,
        refreshToken: ep.refreshToken,
        tokenUrl: ep.tokenUrl,
        clientSecret: 'wrong-secret',
      },
      http: fetchHttp(),
    });
    expect(await failure(client.accessToken())).toMatchObject({ code: 'OAUTH2_INVALID_CLIENT' });
  });

  it('5xx and 429 are Transient; 429 carries Retry-After', async () => {
    const { ep, client } = await setup();
    ep.setMode('server_error');
    expect(await failure(client.accessToken())).toMatchObject({
      code: 'OAUTH2_TOKEN_ENDPOINT_UNAVAILABLE',
      errorClass: 'transient',
      status: 503,
    });
    ep.setMode('rate_limited');
    expect(await failure(client.accessToken())).toMatchObject({
      code: 'OAUTH2_TOKEN_ENDPOINT_UNAVAILABLE',
      errorClass: 'transient',
      retryAfterMs: 7000,
    });
  });

  it('a 2xx without an access_token is Transient (OAUTH2_BAD_TOKEN_RESPONSE)', async () => {
    const { ep, client } = await setup();
    ep.setMode('garbage');
    expect(await failure(client.accessToken())).toMatchObject({
      code: 'OAUTH2_BAD_TOKEN_RESPONSE',
      errorClass: 'transient',
    });
  });

  it('an unreachable endpoint is Transient', async () => {
    const ep = await startFakeTokenEndpoint();
    const url = ep.tokenUrl;
    await ep.close();
    const client = createRefreshTokenClient({
      account: { clientId: 'c', clientSecret: 's3cret', refreshToken: 'r3fresh', tokenUrl: url },
      http: fetchHttp(),
    });
    expect(await failure(client.accessToken())).toMatchObject({
      code: 'OAUTH2_TOKEN_ENDPOINT_UNAVAILABLE',
      errorClass: 'transient',
    });
  });

  it('a refused token URL (guard codes) is Permanent', async () => {
    const client = createRefreshTokenClient({
      account: {
        clientId: 'c',
        clientSecret: 's3cret',
        refreshToken: 'r3fresh',
        tokenUrl: 'http://10.0.0.1/token',
      },
      http: {
        request: () =>
          Promise.reject(Object.assign(new Error('blocked: private address'), { code: 'HTTP_SSRF_BLOCKED' })),
      },
    });
    expect(await failure(client.accessToken())).toMatchObject({
      code: 'OAUTH2_TOKEN_URL_REFUSED',
      errorClass: 'permanent',
    });
  });

  it('a token POST redirected to another origin is refused like a bad token URL', async () => {
    const client = createRefreshTokenClient({
      account: {
        clientId: 'c',
        clientSecret: 's3cret',
        refreshToken: 'r3fresh',
        tokenUrl: 'https://a.example/t',
      },
      http: {
        request: () =>
          Promise.reject(Object.assign(new Error('redirect refused'), { code: 'HTTP_REDIRECT_REFUSED' })),
      },
    });
    expect(await failure(client.accessToken())).toMatchObject({
      code: 'OAUTH2_TOKEN_URL_REFUSED',
      errorClass: 'permanent',
    });
  });

  it('after close, calls fail with OAUTH2_CLOSED (Transient)', async () => {
    const { client } = await setup();
    client.close();
    expect(await failure(client.accessToken())).toMatchObject({
      code: 'OAUTH2_CLOSED',
      errorClass: 'transient',
    });
  });
});

async function withApi() {
  const s = await setup();
  const api = await startProtectedApi((t) => s.ep.isValid(t));
  cleanup.push(() => api.close());
  return { ...s, api };
}

describe('authorized requests', () => {
  it('sends the bearer token and returns the answer', async () => {
    const { client, api, http } = await withApi();
    const res = await client.request(api.url);
    expect(res.status).toBe(200);
    expect(http.calls.at(-1)!.headers.authorization).toMatch(/^Bearer ya29\.fake-1-/);
  });

  it('a 401 refreshes once and retries once', async () => {
    const { ep, client, api } = await withApi();
    await client.request(api.url);
    ep.expireTokens();
    const res = await client.request(api.url);
    expect(res.status).toBe(200);
    expect(ep.requests).toBe(2);
    expect(api.hits).toBe(3);
  });

  it('concurrent 401s with the same stale token share one refresh', async () => {
    const { ep, client, api } = await withApi();
    await client.request(api.url);
    ep.expireTokens();
    const results = await Promise.all([1, 2, 3, 4].map(() => client.request(api.url)));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(ep.requests).toBe(2);
  });

  it('a second 401 with a fresh token is Permanent (OAUTH2_UNAUTHORIZED)', async () => {
    const s = await setup();
    const api = await startProtectedApi(() => false);
    cleanup.push(() => api.close());
    const err = await failure(s.client.request(api.url));
    expect(err).toMatchObject({ code: 'OAUTH2_UNAUTHORIZED', errorClass: 'permanent', status: 401 });
    expect(s.ep.requests).toBe(2);
    expect(api.hits).toBe(2);
  });

  it('a 401 followed by invalid_grant on refresh is Permanent (OAUTH2_INVALID_GRANT)', async () => {
    const { ep, client, api } = await withApi();
    await client.request(api.url);
    ep.revoke();
    expect(await failure(client.request(api.url))).toMatchObject({ code: 'OAUTH2_INVALID_GRANT' });
  });
});

describe('no secrets', () => {
  it('never logs the client secret, refresh token or access tokens', async () => {
    const { ep, client, logger } = await setup();
    const c: RefreshTokenClient = client;
    await c.accessToken();
    ep.setMode('server_error');
    c.invalidate(ep.issued[0]!);
    await failure(c.accessToken());
    expect(logger.records.length).toBeGreaterThan(0);
    expectNoSecrets(ep, logger.lines.join('\n'));
  });
});
