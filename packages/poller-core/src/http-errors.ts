/**
 * HTTP helpers for kinds: the URL checks run at validation, a failed status as the runner's error, and the
 * request named in an error a tick caught. Which failures are Permanent is `classifyError`'s answer alone.
 */
import { checkHostname, clampRetryAfter, codeOf } from '@agent/guarded-http';
import { classifyError, classifyHttpStatus, PermanentError, TransientError } from './errors.js';

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

/**
 * An error a tick caught, with the request it was about (`what`, e.g. `GET https://host/path`) named once in
 * its message and its code at the end. The class is the one the runner would give the original
 * (`classifyError`: a refused request is Permanent, the rest Transient); poller errors (the tick deadline,
 * a lost lease) pass through. Only worth it to name the request: a kind may as well let the error through.
 */
export function asPollerError(err: unknown, what: string): Error {
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
  const Cls = classifyError(err) === 'permanent' ? PermanentError : TransientError;
  return new Cls(text, { cause: err });
}

export interface StatusFailureOptions {
  /** The request as messages name it, e.g. `GET ${safeUrl(url)}` (never a query string). */
  what: string;
  /** Statuses retrying cannot fix. Default: every 4xx but 408, 425 and 429 (`classifyHttpStatus`). */
  permanent?: (status: number) => boolean;
  /** What the operator should do, added to a Permanent message. */
  hint?: string;
}

const isPermanentStatus = (status: number): boolean => classifyHttpStatus(status) === 'permanent';

/**
 * A response whose status is not a success, as the runner's error: Permanent when `permanent(status)`,
 * Transient otherwise, with the server's `Retry-After` clamped to [1 s, 1 h].
 */
export function statusFailure(
  res: { status: number; retryAfterMs?: number | undefined },
  options: StatusFailureOptions,
): Error {
  const { what, permanent = isPermanentStatus, hint = 'check the job config, then resume the job' } = options;
  const retry = res.retryAfterMs === undefined ? {} : { retryAfterMs: clampRetryAfter(res.retryAfterMs) };
  if (permanent(res.status))
    return new PermanentError(`${what}: the server answered ${res.status}; ${hint}`, retry);
  return new TransientError(`${what}: the server answered ${res.status}`, retry);
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
