/**
 * HTTP helpers for kinds: a failed status as the runner's error, the request named in an error a tick caught,
 * and the config fields of kinds that fetch. Which failures are Permanent is `classifyError`'s answer alone.
 * (URL checks for `validate()` are `urlProblems` of `@agent/guarded-http`, which knows the address policy.)
 */
import { classifyError, classifyHttpStatus, PermanentError, TransientError } from './errors.js';

/**
 * An error a tick caught, with the request it was about (`what`, e.g. `GET https://host/path`) named once in
 * its message and its code at the end. The class is the one the runner would give the original
 * (`classifyError`: a refused request is Permanent, the rest Transient); poller errors (the tick deadline,
 * a lost lease) pass through. Only worth it to name the request: a kind may as well let the error through.
 */
export function asPollerError(err: unknown, what: string): Error {
  const c = err !== null && typeof err === 'object' ? (err as { code?: unknown }).code : undefined;
  const code = typeof c === 'string' ? c : undefined;
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

const RETRY_AFTER_MIN_MS = 1000;
const RETRY_AFTER_MAX_MS = 3_600_000;

const isPermanentStatus = (status: number): boolean => classifyHttpStatus(status) === 'permanent';

/**
 * A response whose status is not a success, as the runner's error: Permanent when `permanent(status)`,
 * Transient otherwise, with the server's `Retry-After` clamped to [1 s, 1 h] (as the runner would).
 */
export function statusFailure(
  res: { status: number; retryAfterMs?: number | undefined },
  options: StatusFailureOptions,
): Error {
  const { what, permanent = isPermanentStatus, hint = 'check the job config, then resume the job' } = options;
  const retry =
    res.retryAfterMs === undefined
      ? {}
      : { retryAfterMs: Math.min(Math.max(res.retryAfterMs, RETRY_AFTER_MIN_MS), RETRY_AFTER_MAX_MS) };
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
