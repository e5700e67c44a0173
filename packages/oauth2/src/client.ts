/**
 * OAuth2 refresh-token client: a cached access token, refreshed single-flight about a minute before it
 * expires, and an authorized `request` that refreshes once on a 401 and retries once.
 */
import { codeOf, isRefusal } from '@agent/guarded-http';
import { silentLogger, type Logger } from '@agent/log';
import { parseProviderAccount, type ProviderAccount } from './account.js';
import { OAuth2Error, isOAuth2Error, type OAuth2ErrorCode } from './errors.js';

/** The HTTP client this package needs; `@agent/guarded-http`'s client (and poller-core's `PollerHttp`) fit. */
export interface OAuth2HttpClient {
  request(url: string, options?: OAuth2RequestOptions): Promise<OAuth2HttpResponse>;
}

export interface OAuth2RequestOptions {
  method?: string;
  headers?: Readonly<Record<string, string>>;
  body?: string | Uint8Array;
  signal?: AbortSignal;
  allowPrivateNetworks?: boolean;
  timeoutMs?: number;
}

export interface OAuth2HttpResponse {
  status: number;
  /** Lower-case names. */
  headers: Record<string, string>;
  retryAfterMs?: number | undefined;
  text(): string;
}

export interface RefreshTokenClientOptions {
  account: Pick<ProviderAccount, 'clientId' | 'clientSecret' | 'refreshToken' | 'tokenUrl'> & {
    allowPrivateNetworks?: boolean;
  };
  http: OAuth2HttpClient;
  logger?: Logger;
  /** Milliseconds since the epoch; default `Date.now`. */
  now?: () => number;
  /** Refresh this long before expiry (default 60 000 ms). */
  refreshMarginMs?: number;
  /** Deadline of one token request (default 15 000 ms). */
  tokenTimeoutMs?: number;
  /** Names the client in log records (e.g. the account name). */
  label?: string;
}

export interface RefreshTokenClient {
  /** A valid access token; refreshes (single-flight) when none is cached or it expires within the margin. */
  accessToken(signal?: AbortSignal): Promise<string>;
  /** Drops `token` if it is the cached one (the API refused it), so the next call refreshes. */
  invalidate(token: string): void;
  /**
   * An API request with `Authorization: Bearer`. A 401 invalidates the token, refreshes once and retries
   * once; a second 401 throws `OAUTH2_UNAUTHORIZED`. Every other status is returned for the caller.
   */
  request(url: string, options?: OAuth2RequestOptions): Promise<OAuth2HttpResponse>;
  /** Token requests made so far (successful or not). */
  refreshCount(): number;
  /** Aborts a refresh in flight; later calls throw `OAUTH2_CLOSED`. */
  close(): void;
}

/** Token endpoint `error` codes and the error code each maps to (RFC 6749 section 5.2). */
const TOKEN_ERRORS: Record<string, OAuth2ErrorCode> = {
  invalid_grant: 'OAUTH2_INVALID_GRANT',
  invalid_client: 'OAUTH2_INVALID_CLIENT',
  unauthorized_client: 'OAUTH2_UNAUTHORIZED_CLIENT',
};

interface CachedToken {
  value: string;
  expiresAt: number;
}

/** Waits for `p`, or rejects as soon as `signal` aborts (the shared work goes on for other callers). */
function raceSignal<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e as Error);
      },
    );
  });
}

function parseJson(text: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export function createRefreshTokenClient(options: RefreshTokenClientOptions): RefreshTokenClient {
  const { account, http } = options;
  const logger = (options.logger ?? silentLogger).child({ oauth2: options.label ?? 'account' });
  const now = options.now ?? Date.now;
  const margin = options.refreshMarginMs ?? 60_000;
  const tokenTimeoutMs = options.tokenTimeoutMs ?? 15_000;
  const allowPrivate = account.allowPrivateNetworks === true;
  const secrets = [account.clientSecret, account.refreshToken].filter((s) => s.length >= 4);
  let cached: CachedToken | null = null;
  let inflight: Promise<CachedToken> | null = null;
  let refreshes = 0;
  let closed = false;
  const closing = new AbortController();

  /** Removes every secret and issued token from a text we did not write (e.g. `error_description`). */
  const scrub = (text: string): string => {
    let s = text;
    for (const v of [...secrets, ...(cached ? [cached.value] : [])]) s = s.split(v).join('[redacted]');
    s = s.replace(/\s+/g, ' ').trim();
    return s.length > 120 ? `${s.slice(0, 119)}…` : s;
  };

  const refresh = async (): Promise<CachedToken> => {
    refreshes++;
    const body = new URLSearchParams({
      grant_type: 'refresh_token',
      client_id: account.clientId,
      client_secret: account.clientSecret,
      refresh_token: account.refreshToken,
    }).toString();
    let res: OAuth2HttpResponse;
    try {
      res = await http.request(account.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body,
        signal: closing.signal,
        allowPrivateNetworks: allowPrivate,
        timeoutMs: tokenTimeoutMs,
      });
    } catch (err) {
      if (closed)
        throw new OAuth2Error('OAUTH2_CLOSED', 'the OAuth2 client was closed during a token refresh');
      const code = codeOf(err);
      // The token URL itself can never work (bad URL, SSRF guard, a body redirected to another origin).
      if (isRefusal(err))
        throw new OAuth2Error(
          'OAUTH2_TOKEN_URL_REFUSED',
          `the token URL was refused (${code}); fix token_url, or set allow_private_networks for a private host`,
          { cause: err },
        );
      throw new OAuth2Error(
        'OAUTH2_TOKEN_ENDPOINT_UNAVAILABLE',
        `the token endpoint could not be reached (${code ?? 'network error'}); retrying later`,
        { cause: err },
      );
    }
    const json = parseJson(res.text());
    if (res.status >= 200 && res.status < 300) {
      const token = json?.access_token;
      const expiresIn = Number(json?.expires_in ?? 3600);
      if (typeof token !== 'string' || token.length === 0 || !Number.isFinite(expiresIn))
        throw new OAuth2Error(
          'OAUTH2_BAD_TOKEN_RESPONSE',
          `the token endpoint answered ${res.status} without an access_token; check token_url`,
          { status: res.status },
        );
      return { value: token, expiresAt: now() + Math.max(0, expiresIn) * 1000 };
    }
    const oauthError = typeof json?.error === 'string' ? json.error : undefined;
    const safeOauthError = oauthError && /^[A-Za-z0-9_.-]{1,64}$/.test(oauthError) ? oauthError : undefined;
    const description =
      typeof json?.error_description === 'string' && json.error_description
        ? `: ${scrub(json.error_description)}`
        : '';
    const extra = {
      status: res.status,
      ...(safeOauthError ? { oauthError: safeOauthError } : {}),
      ...(res.retryAfterMs !== undefined ? { retryAfterMs: res.retryAfterMs } : {}),
    };
    if (res.status >= 500 || res.status === 429 || res.status === 408)
      throw new OAuth2Error(
        'OAUTH2_TOKEN_ENDPOINT_UNAVAILABLE',
        `the token endpoint answered ${res.status}; retrying later`,
        extra,
      );
    const mapped = safeOauthError ? TOKEN_ERRORS[safeOauthError] : undefined;
    if (mapped === 'OAUTH2_INVALID_GRANT')
      throw new OAuth2Error(
        mapped,
        `the refresh token was refused (invalid_grant${description}); authorize the account again and replace refresh_token`,
        extra,
      );
    if (mapped === 'OAUTH2_INVALID_CLIENT')
      throw new OAuth2Error(
        mapped,
        `the OAuth client was refused (invalid_client${description}); check client_id and client_secret`,
        extra,
      );
    if (mapped === 'OAUTH2_UNAUTHORIZED_CLIENT')
      throw new OAuth2Error(
        mapped,
        `the OAuth client may not use refresh tokens (unauthorized_client${description}); check the client type`,
        extra,
      );
    throw new OAuth2Error(
      'OAUTH2_TOKEN_REJECTED',
      `the token endpoint answered ${res.status}${safeOauthError ? ` (${safeOauthError}${description})` : ''}; check the account settings`,
      extra,
    );
  };

  const accessToken = async (signal?: AbortSignal): Promise<string> => {
    if (closed) throw new OAuth2Error('OAUTH2_CLOSED', 'the OAuth2 client is closed');
    if (cached && cached.expiresAt - margin > now()) return cached.value;
    if (!inflight) {
      const p = refresh().then(
        (t) => {
          cached = t;
          logger.debug('oauth2 access token refreshed', {
            expires_in_s: Math.round((t.expiresAt - now()) / 1000),
          });
          return t;
        },
        (err: unknown) => {
          logger.warn('oauth2 token refresh failed', {
            code: codeOf(err),
            ...(isOAuth2Error(err) && err.status !== undefined ? { status: err.status } : {}),
          });
          throw err;
        },
      );
      inflight = p;
      void p
        .finally(() => {
          if (inflight === p) inflight = null;
        })
        .catch(() => {});
    }
    return (await raceSignal(inflight, signal)).value;
  };

  const invalidate = (token: string) => {
    if (cached?.value === token) cached = null;
  };

  return {
    accessToken,
    invalidate,
    async request(url, opts = {}) {
      const send = async (token: string) =>
        http.request(url, {
          ...opts,
          headers: { accept: 'application/json', ...opts.headers, authorization: `Bearer ${token}` },
          allowPrivateNetworks: allowPrivate || opts.allowPrivateNetworks === true,
        });
      const first = await accessToken(opts.signal);
      const res = await send(first);
      if (res.status !== 401) return res;
      invalidate(first);
      const second = await accessToken(opts.signal);
      const again = await send(second);
      if (again.status !== 401) return again;
      invalidate(second);
      throw new OAuth2Error(
        'OAUTH2_UNAUTHORIZED',
        'the API refused a freshly refreshed access token (401); check the scopes granted to refresh_token',
        { status: 401 },
      );
    },
    refreshCount: () => refreshes,
    close() {
      closed = true;
      cached = null;
      closing.abort(new OAuth2Error('OAUTH2_CLOSED', 'the OAuth2 client was closed'));
    },
  };
}

/**
 * The client of an agent's provider account, as a poller kind builds it: the account named by the agent's
 * `credentials.<plugin>` (`null` when the agent names none), parsed with the provider's API base URL.
 * Throws `OAuth2Error` `OAUTH2_BAD_ACCOUNT` (permanent) with a message that says what to fix.
 */
export function createAccountClient(opts: {
  plugin: string;
  agentId: string;
  account: { name: string; config: Readonly<Record<string, unknown>> } | null;
  apiBaseUrl: string;
  http: OAuth2HttpClient;
  logger?: Logger;
}): { account: ProviderAccount; accountName: string; client: RefreshTokenClient } {
  if (!opts.account)
    throw new OAuth2Error(
      'OAUTH2_BAD_ACCOUNT',
      `agent "${opts.agentId}" has no ${opts.plugin} account; add credentials: { ${opts.plugin}: <account> } to its definition`,
    );
  let account: ProviderAccount;
  try {
    account = parseProviderAccount(opts.account.config, { apiBaseUrl: opts.apiBaseUrl });
  } catch (err) {
    throw new OAuth2Error(
      'OAUTH2_BAD_ACCOUNT',
      `${opts.plugin} account "${opts.account.name}": ${(err as Error).message}${isOAuth2Error(err) ? ` [${err.code}]` : ''}`,
    );
  }
  const client = createRefreshTokenClient({
    account,
    http: opts.http,
    ...(opts.logger ? { logger: opts.logger } : {}),
    label: opts.account.name,
  });
  return { account, accountName: opts.account.name, client };
}
