/**
 * HTTP helpers for kinds: the URL checks run at validation, and the mapping of guarded-http failures
 * and HTTP statuses to the runner's Transient / Permanent errors.
 */
import { checkHostname } from '@agent/guarded-http';
import { PermanentError, TransientError } from './errors.js';

const RETRY_AFTER_MIN_MS = 1_000;
const RETRY_AFTER_MAX_MS = 3_600_000;

/** `Retry-After` clamped to [1 s, 1 h], the range the runner honours. */
export function clampRetryAfterMs(ms: number): number {
  return Math.min(RETRY_AFTER_MAX_MS, Math.max(RETRY_AFTER_MIN_MS, Math.round(ms)));
}

/** Scheme, host and path: no userinfo, query or fragment (they may carry tokens). */
export function safeUrl(url: string | URL): string {
  try {
    const u = typeof url === 'string' ? new URL(url) : url;
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}

/**
 * Problems of a job URL, for a kind's `validate()`: not http(s), userinfo, or a literal host the SSRF guard
 * refuses (private or loopback while `allow_private_networks` is off; link-local, metadata and other
 * never-allowed ranges always). Host names are checked by the guard once resolved, at fetch time; this
 * check only lets operators learn at boot.
 */
export function urlProblems(field: string, raw: string, allowPrivateNetworks: boolean): string[] {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return [`${field} is not a valid URL; write it as https://host/path`];
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return [`${field} must use http or https, not ${url.protocol.replace(/:$/, '')}`];
  if (url.username || url.password)
    return [`${field} must not contain user:password@; send credentials in a header instead`];
  const verdict = checkHostname(url.hostname, { allowPrivateNetworks });
  if (verdict.allowed) return [];
  const lifted = checkHostname(url.hostname, { allowPrivateNetworks: true }).allowed;
  return lifted
    ? [
        `${field} host ${url.hostname} is a private or loopback address (${verdict.reason}), refused by the SSRF guard; set allow_private_networks: true if the job must reach it`,
      ]
    : [`${field} host ${url.hostname} is never allowed (${verdict.reason})`];
}

/** Guarded-http error codes that a retry cannot fix: the job config must change. */
const PERMANENT_HTTP_CODES = new Set([
  'HTTP_SSRF_BLOCKED',
  'HTTP_BAD_URL',
  'HTTP_BAD_SCHEME',
  'HTTP_INVALID_REQUEST',
  'HTTP_REDIRECT_REFUSED',
]);

function codeOf(err: unknown): string | undefined {
  const c = err !== null && typeof err === 'object' ? (err as { code?: unknown }).code : undefined;
  return typeof c === 'string' ? c : undefined;
}

/**
 * A failed request (it threw) as a runner error. Poller errors (the tick deadline) pass through; the
 * guard's refusal and request mistakes are Permanent; network, timeout, body cap and the rest Transient.
 * Messages come from the HTTP client, which never includes header values, query strings or userinfo.
 */
export function requestFailure(err: unknown, what: string): Error {
  const code = codeOf(err);
  if (code === 'POLLER_TRANSIENT' || code === 'POLLER_PERMANENT' || code === 'POLLER_LEASE_LOST')
    return err as Error;
  const message = err instanceof Error ? err.message : String(err);
  if (code === 'HTTP_SSRF_BLOCKED')
    return new PermanentError(
      `${what}: refused by the SSRF guard (${message}); set allow_private_networks: true to reach private hosts`,
      { cause: err },
    );
  // The client's messages usually name the request already ("GET https://x/y failed: ..."): say it once.
  const text = `${message.startsWith(what) ? message : `${what}: ${message}`}${code ? ` [${code}]` : ''}`;
  if (code && PERMANENT_HTTP_CODES.has(code)) return new PermanentError(text, { cause: err });
  return new TransientError(text, { cause: err });
}

/** An HTTP status that is not success, with the server's `Retry-After` when it sent one. */
export function statusFailure(
  status: number,
  what: string,
  retryAfterMs: number | undefined,
  permanent: (status: number) => boolean,
  hint: string,
): Error {
  const retry = retryAfterMs === undefined ? {} : { retryAfterMs: clampRetryAfterMs(retryAfterMs) };
  if (permanent(status)) return new PermanentError(`${what}: the server answered ${status}; ${hint}`, retry);
  return new TransientError(`${what}: the server answered ${status}`, retry);
}

/**
 * Config fields of kinds that fetch a URL: the SSRF opt-out and the request limits. Spread into a kind's
 * `properties` next to `withBaseConfig`.
 */
export const httpConfigProperties = {
  allow_private_networks: {
    type: 'boolean',
    default: false,
    description: 'Allow loopback, RFC 1918, unique-local and CGNAT hosts (refused by default).',
  },
  timeout_ms: {
    type: 'integer',
    minimum: 1000,
    maximum: 300_000,
    description: 'Whole-request deadline, redirects and body included (default 30000).',
  },
  max_body_bytes: {
    type: 'integer',
    minimum: 1024,
    maximum: 104_857_600,
    description: 'Body cap, on the wire and decompressed (default 10 MiB).',
  },
} as const;

/** The request options those fields set (only the ones the job sets). */
export function httpRequestLimits(config: { timeout_ms?: number; max_body_bytes?: number }): {
  timeoutMs?: number;
  maxBodyBytes?: number;
} {
  return {
    ...(config.timeout_ms !== undefined ? { timeoutMs: config.timeout_ms } : {}),
    ...(config.max_body_bytes !== undefined ? { maxBodyBytes: config.max_body_bytes } : {}),
  };
}
