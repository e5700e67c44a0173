/**
 * Errors with a stable `code` and an `errorClass`. Kinds map `errorClass` to their own error classes
 * (e.g. poller-core's `TransientError` / `PermanentError`); nothing here ever carries a token or a secret.
 */

export type OAuth2ErrorClass = 'transient' | 'permanent';

/** Whether retrying can help, what the code means, and what the operator does about it. */
export interface OAuth2ErrorInfo {
  readonly errorClass: OAuth2ErrorClass;
  readonly meaning: string;
  readonly action: string;
}

export const OAUTH2_ERROR_CODES = {
  OAUTH2_INVALID_GRANT: {
    errorClass: 'permanent',
    meaning:
      'The token endpoint refused the refresh token (`invalid_grant`): it expired or was revoked, the password changed, or a "Testing" app\'s 7-day expiry passed.',
    action: 'Authorize the account again and replace `refresh_token`.',
  },
  OAUTH2_INVALID_CLIENT: {
    errorClass: 'permanent',
    meaning: 'The token endpoint does not know the client, or the secret is wrong (`invalid_client`).',
    action: 'Check `client_id` and `client_secret`.',
  },
  OAUTH2_UNAUTHORIZED_CLIENT: {
    errorClass: 'permanent',
    meaning: 'The client may not use refresh tokens (`unauthorized_client`).',
    action: 'Check the OAuth client type and its consent screen.',
  },
  OAUTH2_TOKEN_REJECTED: {
    errorClass: 'permanent',
    meaning:
      'The token endpoint refused the request with another 4xx error (`invalid_request`, `invalid_scope`, …).',
    action: 'Check the account settings.',
  },
  OAUTH2_TOKEN_ENDPOINT_UNAVAILABLE: {
    errorClass: 'transient',
    meaning: 'The token endpoint could not be reached, timed out, or answered 5xx, 429 or 408.',
    action: 'Nothing: retried with backoff.',
  },
  OAUTH2_BAD_TOKEN_RESPONSE: {
    errorClass: 'transient',
    meaning: 'The token endpoint answered 2xx without a usable `access_token`.',
    action: 'Nothing at first (retried); check `token_url` if it persists.',
  },
  OAUTH2_TOKEN_URL_REFUSED: {
    errorClass: 'permanent',
    meaning:
      'The token URL is invalid, or the HTTP guard refused it (a private address without `allow_private_networks`, a body redirected to another origin).',
    action: 'Fix `token_url`, or set `allow_private_networks` for a private host.',
  },
  OAUTH2_UNAUTHORIZED: {
    errorClass: 'permanent',
    meaning: 'The API answered 401 again to a freshly refreshed token.',
    action: 'Check the scopes granted to the refresh token.',
  },
  OAUTH2_BAD_ACCOUNT: {
    errorClass: 'permanent',
    meaning: 'The account block misses a field or has one of the wrong type.',
    action: 'Fix the account in `plugins/<kind>.yaml`.',
  },
  OAUTH2_CLOSED: {
    errorClass: 'transient',
    meaning: 'The client was closed (credentials reloaded, or shutdown).',
    action: 'Nothing: the next tick builds a new client.',
  },
} as const satisfies Record<string, OAuth2ErrorInfo>;

export type OAuth2ErrorCode = keyof typeof OAUTH2_ERROR_CODES;

export interface OAuth2ErrorOptions {
  cause?: unknown;
  /** HTTP status of the answer that caused it, when there was one. */
  status?: number;
  /** The OAuth2 `error` code the endpoint sent (e.g. `invalid_grant`); never a secret. */
  oauthError?: string;
  /** Wait at least this long before retrying (from `Retry-After`). */
  retryAfterMs?: number;
}

export class OAuth2Error extends Error {
  readonly code: OAuth2ErrorCode;
  readonly errorClass: OAuth2ErrorClass;
  readonly status: number | undefined;
  readonly oauthError: string | undefined;
  readonly retryAfterMs: number | undefined;
  constructor(code: OAuth2ErrorCode, message: string, options: OAuth2ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'OAuth2Error';
    this.code = code;
    this.errorClass = OAUTH2_ERROR_CODES[code].errorClass;
    this.status = options.status;
    this.oauthError = options.oauthError;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** True for an `OAuth2Error` of any copy of this package (checked by `code`, not `instanceof`). */
export function isOAuth2Error(err: unknown): err is OAuth2Error {
  const code = err !== null && typeof err === 'object' ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' && Object.hasOwn(OAUTH2_ERROR_CODES, code);
}
