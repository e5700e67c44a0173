/**
 * Every failure of the guarded client is a `GuardedHttpError` with a stable `code`. Callers decide
 * Transient vs Permanent from the code (and from `status` on a response), never from the message.
 */

/** What one error code means and what to do about it. */
export interface GuardedHttpErrorInfo {
  readonly meaning: string;
  readonly action: string;
  /** The request itself is refused: retrying cannot help, the URL or the request settings must change. */
  readonly refused: boolean;
}

export const GUARDED_HTTP_ERROR_CODES = {
  HTTP_BAD_URL: {
    meaning: 'The URL cannot be parsed, has no host, or carries user:password@ (in the URL or a redirect).',
    action: 'Fix the configured URL; send credentials in a header (e.g. `Authorization`) instead.',
    refused: true,
  },
  HTTP_BAD_SCHEME: {
    meaning: 'The URL, or a redirect target, uses a scheme other than http or https.',
    action: 'Use an http(s) URL.',
    refused: true,
  },
  HTTP_SSRF_BLOCKED: {
    meaning:
      'The host, a resolved address or a redirect target is in a refused address category (loopback, private, link-local, metadata…); `host` and `category` say which.',
    action:
      'Point the job at a public host, or set `allow_private_networks: true` for a private one. Link-local and metadata addresses are never allowed.',
    refused: true,
  },
  HTTP_TOO_MANY_REDIRECTS: {
    meaning: 'The server redirected more than 5 times.',
    action: 'Configure the final URL. Retried meanwhile: a redirect loop is often a passing server fault.',
    refused: false,
  },
  HTTP_REDIRECT_REFUSED: {
    meaning:
      'A redirect that keeps the method (307, 308; 301/302 after a method other than POST) leads to another origin while the request has a body; it is not followed.',
    action: 'Configure the final URL if that origin is trusted.',
    refused: true,
  },
  HTTP_BODY_TOO_LARGE: {
    meaning: 'The body, on the wire or decompressed, is larger than the cap; `limitBytes` gives the cap.',
    action: 'Raise `max_body_bytes` (`maxBodyBytes`) if the size is legitimate.',
    refused: false,
  },
  HTTP_BAD_ENCODING: {
    meaning: 'The compressed body is corrupt.',
    action: 'Nothing: retried later; a server or proxy fault.',
    refused: false,
  },
  HTTP_TIMEOUT: {
    meaning: 'The server did not answer in time; `phase` is `connect`, `headers`, `body` or `deadline`.',
    action: 'Nothing: retried later. Raise `timeout_ms` if the server is always this slow.',
    refused: false,
  },
  HTTP_ABORTED: {
    meaning: "The caller's signal cancelled the request (shutdown, pause, reload, tick deadline).",
    action: 'Nothing: the caller asked for it.',
    refused: false,
  },
  HTTP_NETWORK: {
    meaning:
      'The name did not resolve (`causeCode` `ENOTFOUND`), or the connection was refused or reset, or TLS failed.',
    action: 'Nothing: retried later. Check the host name if it never resolves.',
    refused: false,
  },
  HTTP_INVALID_REQUEST: {
    meaning:
      'A bad method, header name or header value, a header the client sets itself, or a body on GET/HEAD. Header values are never echoed.',
    action: "Fix the job's request settings (`method`, `headers`, `body`).",
    refused: true,
  },
  HTTP_INVALID_JSON: {
    meaning: '`json()` or `parseJson` on a body that is not JSON (the body is not quoted).',
    action: 'Decided by the caller (`webhook_poll`: retried). Check that the URL returns JSON.',
    refused: false,
  },
  HTTP_JSON_TOO_DEEP: {
    meaning: 'A JSON body nests objects and arrays deeper than the cap (default 64); the message names it.',
    action:
      'Decided by the caller (`webhook_poll`: retried). Check that the URL returns the expected document.',
    refused: false,
  },
  HTTP_CLOSED: {
    meaning: 'The client was closed (shutdown, or the owner replaced it).',
    action: 'Nothing for an operator; code that owns the client creates a new one.',
    refused: false,
  },
} as const satisfies Record<string, GuardedHttpErrorInfo>;

export type GuardedHttpErrorCode = keyof typeof GUARDED_HTTP_ERROR_CODES;

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
  /**
   * The request itself is refused (see `isRefusal`). Carried on the error so that code without this package
   * (the poller contract's `classifyError`) can tell a refusal from a failure by looking at the object.
   */
  readonly refused: boolean;

  constructor(code: GuardedHttpErrorCode, message: string, details: GuardedHttpErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.refused = GUARDED_HTTP_ERROR_CODES[code].refused;
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

/** The `code` of an error-like value when it is a string; `undefined` otherwise. */
export function codeOf(err: unknown): string | undefined {
  const c = err !== null && typeof err === 'object' ? (err as { code?: unknown }).code : undefined;
  return typeof c === 'string' ? c : undefined;
}

/**
 * True when `err` is a refusal of the request itself (bad URL or scheme, SSRF guard, invalid request,
 * a body the server redirects to another origin): no retry can fix it, the configuration must change.
 * Recognised by `code`, so errors of another copy of this package count too.
 */
export function isRefusal(err: unknown): boolean {
  const code = codeOf(err);
  return (
    code !== undefined &&
    Object.hasOwn(GUARDED_HTTP_ERROR_CODES, code) &&
    GUARDED_HTTP_ERROR_CODES[code as GuardedHttpErrorCode].refused
  );
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
