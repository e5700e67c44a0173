/**
 * Every failure of the guarded client is a `GuardedHttpError` with a stable `code`. Kinds decide
 * Transient vs Permanent from the code (and from `status` on a response), never from the message.
 */

export type GuardedHttpErrorCode =
  | 'HTTP_BAD_URL'
  | 'HTTP_BAD_SCHEME'
  | 'HTTP_SSRF_BLOCKED'
  | 'HTTP_TOO_MANY_REDIRECTS'
  | 'HTTP_REDIRECT_REFUSED'
  | 'HTTP_BODY_TOO_LARGE'
  | 'HTTP_BAD_ENCODING'
  | 'HTTP_TIMEOUT'
  | 'HTTP_ABORTED'
  | 'HTTP_NETWORK'
  | 'HTTP_INVALID_REQUEST'
  | 'HTTP_INVALID_JSON'
  | 'HTTP_JSON_TOO_DEEP'
  | 'HTTP_CLOSED';

/** Which limit fired for `HTTP_TIMEOUT`. */
export type TimeoutPhase = 'connect' | 'headers' | 'body' | 'deadline';

export interface GuardedHttpErrorDetails {
  /** The URL as safe to show: scheme, host, port and path; never userinfo or the query string. */
  url?: string;
  /** Host name or address the error is about (SSRF refusals, network errors). */
  host?: string;
  /** Address category for `HTTP_SSRF_BLOCKED` (see `AddressCategory`). */
  category?: string;
  /** For `HTTP_TIMEOUT`. */
  phase?: TimeoutPhase;
  /** Underlying system or library code for `HTTP_NETWORK` (e.g. `ECONNREFUSED`, `ENOTFOUND`). */
  causeCode?: string;
  /** For `HTTP_BODY_TOO_LARGE`: the cap in bytes. */
  limitBytes?: number;
  cause?: unknown;
}

export class GuardedHttpError extends Error {
  override readonly name = 'GuardedHttpError';
  readonly code: GuardedHttpErrorCode;
  readonly url: string | undefined;
  readonly host: string | undefined;
  readonly category: string | undefined;
  readonly phase: TimeoutPhase | undefined;
  readonly causeCode: string | undefined;
  readonly limitBytes: number | undefined;

  constructor(code: GuardedHttpErrorCode, message: string, details: GuardedHttpErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.url = details.url;
    this.host = details.host;
    this.category = details.category;
    this.phase = details.phase;
    this.causeCode = details.causeCode;
    this.limitBytes = details.limitBytes;
  }
}

export function isGuardedHttpError(value: unknown): value is GuardedHttpError {
  return value instanceof GuardedHttpError;
}

/**
 * A URL reduced to what may appear in messages and logs: no userinfo, no query, no fragment
 * (query strings often carry API keys).
 */
export function safeUrl(url: URL | string): string {
  try {
    const u = typeof url === 'string' ? new URL(url) : url;
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(unparseable URL)';
  }
}
