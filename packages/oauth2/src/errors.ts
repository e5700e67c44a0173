/**
 * Errors with a stable `code` and an `errorClass`. Kinds map `errorClass` to their own error classes
 * (e.g. poller-core's `TransientError` / `PermanentError`); nothing here ever carries a token or a secret.
 */

export const OAUTH2_ERROR_CODES = {
  OAUTH2_INVALID_GRANT:
    'The token endpoint refused the refresh token (`invalid_grant`): it expired, was revoked, or the password changed. Authorize again and replace `refresh_token`.',
  OAUTH2_INVALID_CLIENT:
    'The token endpoint does not know the client (`invalid_client`). Check `client_id` and `client_secret`.',
  OAUTH2_UNAUTHORIZED_CLIENT:
    'The client may not use refresh tokens (`unauthorized_client`). Check the OAuth client type and its consent screen.',
  OAUTH2_TOKEN_REJECTED:
    'The token endpoint refused the request with another 4xx error (e.g. `invalid_request`, `invalid_scope`). Check the account settings.',
  OAUTH2_TOKEN_ENDPOINT_UNAVAILABLE:
    'The token endpoint could not be reached or answered 5xx/429 or timed out. Retried later.',
  OAUTH2_BAD_TOKEN_RESPONSE:
    'The token endpoint answered 2xx without a usable `access_token`. Retried later; check `token_url` if it persists.',
  OAUTH2_TOKEN_URL_REFUSED:
    'The token URL is invalid or refused by the HTTP guard (private address without `allow_private_networks`). Fix `token_url`.',
  OAUTH2_UNAUTHORIZED:
    'The API answered 401 again with a freshly refreshed token. Check the scopes granted to the refresh token.',
  OAUTH2_BAD_ACCOUNT: 'The account block is missing a field or has a wrong type. Fix the plugin file.',
  OAUTH2_CLOSED: 'The client was closed (credentials reloaded or shutdown). Retried with a new client.',
} as const;

export type OAuth2ErrorCode = keyof typeof OAUTH2_ERROR_CODES;
export type OAuth2ErrorClass = 'transient' | 'permanent';

const CLASS_OF: Record<OAuth2ErrorCode, OAuth2ErrorClass> = {
  OAUTH2_INVALID_GRANT: 'permanent',
  OAUTH2_INVALID_CLIENT: 'permanent',
  OAUTH2_UNAUTHORIZED_CLIENT: 'permanent',
  OAUTH2_TOKEN_REJECTED: 'permanent',
  OAUTH2_TOKEN_ENDPOINT_UNAVAILABLE: 'transient',
  OAUTH2_BAD_TOKEN_RESPONSE: 'transient',
  OAUTH2_TOKEN_URL_REFUSED: 'permanent',
  OAUTH2_UNAUTHORIZED: 'permanent',
  OAUTH2_BAD_ACCOUNT: 'permanent',
  OAUTH2_CLOSED: 'transient',
};

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
    this.errorClass = CLASS_OF[code];
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
