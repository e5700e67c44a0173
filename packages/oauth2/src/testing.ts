/**
 * @agent/oauth2/testing — a loopback fake of an OAuth2 token endpoint (Google's shape: form-encoded
 * `grant_type=refresh_token`, JSON `{access_token, expires_in, token_type}`; errors as
 * `{error, error_description}` with 400/401), for tests of this package and of the provider kinds.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type FakeTokenMode =
  | 'ok'
  | 'invalid_grant'
  | 'invalid_client'
  | 'unauthorized_client'
  | 'invalid_scope'
  | 'server_error'
  | 'rate_limited'
  | 'garbage';

export interface FakeTokenEndpointOptions {
  clientId?: string;
  clientSecret?: string;
  refreshToken?: string;
  /** `expires_in` of issued tokens, seconds (default 3600). */
  expiresIn?: number;
}

export interface FakeTokenEndpoint {
  /** The token URL (`http://127.0.0.1:<port>/token`). */
  readonly tokenUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly refreshToken: string;
  /** Token requests received. */
  readonly requests: number;
  /** Access tokens issued, in order. */
  readonly issued: readonly string[];
  /** True for an issued access token that was not expired with `expireTokens`. */
  isValid(accessToken: string): boolean;
  /** How the next requests are answered until changed (default `ok`). */
  setMode(mode: FakeTokenMode): void;
  /** Every issued token stops being valid (the API fakes then answer 401). */
  expireTokens(): void;
  /** The refresh token is revoked: later requests get `invalid_grant`. */
  revoke(): void;
  /** Holds answers until `release()` (to let concurrent callers pile up). */
  hold(): void;
  release(): void;
  /** An account block pointing at this endpoint (`api_base_url` as given). */
  account(apiBaseUrl: string): Record<string, unknown>;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(text);
}

export async function startFakeTokenEndpoint(
  options: FakeTokenEndpointOptions = {},
): Promise<FakeTokenEndpoint> {
  const clientId = options.clientId ?? 'client-123.apps.example';
  const clientSecret = options.clientSecret ?? `secret-${randomBytes(6).toString('hex')}`;
  const refreshToken = options.refreshToken ?? `1//refresh-${randomBytes(8).toString('hex')}`;
  const expiresIn = options.expiresIn ?? 3600;
  let mode: FakeTokenMode = 'ok';
  let revoked = false;
  let requests = 0;
  const issued: string[] = [];
  const valid = new Set<string>();
  let held: (() => void)[] | null = null;

  const server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      requests++;
      if (held) await new Promise<void>((r) => held!.push(r));
      if (req.method !== 'POST' || new URL(req.url ?? '/', 'http://x').pathname !== '/token')
        return send(res, 404, { error: 'not_found' });
      if (mode === 'server_error') return send(res, 503, { error: 'temporarily_unavailable' });
      if (mode === 'rate_limited') return send(res, 429, { error: 'rate_limited' }, { 'retry-after': '7' });
      if (mode === 'garbage') return send(res, 200, '<html>captive portal</html>');
      if (mode === 'invalid_client')
        return send(res, 401, {
          error: 'invalid_client',
          error_description: 'The OAuth client was not found.',
        });
      if (mode === 'unauthorized_client')
        return send(res, 400, { error: 'unauthorized_client', error_description: 'Unauthorized' });
      if (mode === 'invalid_scope')
        return send(res, 400, { error: 'invalid_scope', error_description: 'Bad scope' });
      const form = new URLSearchParams(body);
      if (form.get('grant_type') !== 'refresh_token')
        return send(res, 400, { error: 'unsupported_grant_type', error_description: 'Invalid grant_type' });
      if (form.get('client_id') !== clientId || form.get('client_secret') !== clientSecret)
        return send(res, 401, { error: 'invalid_client', error_description: 'Unauthorized' });
      if (mode === 'invalid_grant' || revoked || form.get('refresh_token') !== refreshToken)
        return send(res, 400, {
          error: 'invalid_grant',
          // Echoes the token on purpose: the client must scrub what it repeats.
          error_description: `Token has been expired or revoked. (${form.get('refresh_token') ?? ''})`,
        });
      const token = `ya29.fake-${issued.length + 1}-${randomBytes(6).toString('hex')}`;
      issued.push(token);
      valid.add(token);
      return send(res, 200, {
        access_token: token,
        expires_in: expiresIn,
        scope: 'https://www.googleapis.com/auth/gmail.modify',
        token_type: 'Bearer',
      });
    })().catch(() => send(res, 500, { error: 'internal' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const tokenUrl = `http://127.0.0.1:${port}/token`;

  return {
    tokenUrl,
    clientId,
    clientSecret,
    refreshToken,
    get requests() {
      return requests;
    },
    issued,
    isValid: (t) => valid.has(t),
    setMode(m) {
      mode = m;
    },
    expireTokens() {
      valid.clear();
    },
    revoke() {
      revoked = true;
      valid.clear();
    },
    hold() {
      held ??= [];
    },
    release() {
      const h = held ?? [];
      held = null;
      for (const r of h) r();
    },
    account: (apiBaseUrl) => ({
      client_id: clientId,
      client_secret: clientSecret,
      refresh_token: refreshToken,
      token_url: tokenUrl,
      api_base_url: apiBaseUrl,
      allow_private_networks: true,
    }),
    async close() {
      const h = held ?? [];
      held = null;
      for (const r of h) r();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
