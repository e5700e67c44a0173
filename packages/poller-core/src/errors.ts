/**
 * Error classes with stable `code`s. The runner recognises errors by `code`, never by `instanceof`,
 * so a kind built against another copy of this package is classified the same way.
 */
import { codeOf, isRefusal } from '@agent/guarded-http';

export const POLLER_ERROR_CODES = {
  POLLER_TRANSIENT:
    'A tick failed in a way that may pass (network, 5xx, 429, timeout). Retried with backoff; counts toward the breaker.',
  POLLER_PERMANENT:
    'A tick failed in a way that will not pass by retrying (401 after refresh, revoked grant, 404, 410). The job is paused and an alert sent.',
  POLLER_LEASE_LOST:
    'This process no longer holds the job lease (another holder took over, or the job was replaced or removed); its state writes are refused.',
  POLLER_UNKNOWN_JOB: 'No job with this id is loaded.',
  POLLER_INVALID_KIND: 'A kind definition is malformed (name, apiVersion, schema, tick).',
  POLLER_NOT_A_KIND: 'A value given to the registry was not made by definePollerKind.',
  POLLER_DUPLICATE_KIND: 'Two kinds share one name.',
  POLLER_KIND_API_VERSION: 'A kind was built for another plugin API version.',
  POLLER_KIND_PACKAGE: 'A kind package could not be loaded, or exports no kind.',
  POLLER_UNKNOWN_KIND: 'A job names a kind that is not registered.',
  POLLER_INVALID_CONFIG: 'A job config does not match its kind schema, or fails the kind checks.',
  POLLER_BAD_TEMPLATE: 'A message_template has a syntax error or an unknown placeholder.',
  POLLER_BAD_SCHEDULE:
    'A schedule is invalid: not 6 cron fields, unknown tz, a cron that never fires, or a bad `at` instant.',
  POLLER_UNKNOWN_AGENT: 'A job names an agent that does not exist.',
  POLLER_NO_BINDING: 'The job agent has no inbound binding for a channel the job delivers to.',
  POLLER_NO_CREDENTIALS: 'The job agent has no account for the credentials the kind needs.',
  POLLER_CONFIRM_REQUIRED: 'A destructive operation (reset) was called without confirmation.',
  POLLER_STOPPED: 'The poller service is stopped.',
  POLLER_STATE_DB: 'The state database could not be opened, put in WAL mode or migrated.',
} as const;

export type PollerErrorCode = keyof typeof POLLER_ERROR_CODES;

export interface PollerErrorOptions {
  /** Wait at least this long before the next attempt (e.g. from `Retry-After`); clamped to [1 s, 1 h]. */
  retryAfterMs?: number;
  cause?: unknown;
}

export class PollerError extends Error {
  readonly code: PollerErrorCode;
  readonly retryAfterMs: number | undefined;
  constructor(code: PollerErrorCode, message: string, options: PollerErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'PollerError';
    this.code = code;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** Worth retrying: counts toward the breaker. Anything thrown that is not a `PermanentError` is Transient. */
export class TransientError extends PollerError {
  constructor(message: string, options: PollerErrorOptions = {}) {
    super('POLLER_TRANSIENT', message, options);
    this.name = 'TransientError';
  }
}

/** Retrying will not help: the runner pauses the job and alerts. */
export class PermanentError extends PollerError {
  constructor(message: string, options: PollerErrorOptions = {}) {
    super('POLLER_PERMANENT', message, options);
    this.name = 'PermanentError';
  }
}

/** A state write by a holder that no longer holds the job (stale epoch, replaced or removed job). */
export class LeaseLostError extends PollerError {
  constructor(message = 'the job lease is no longer held by this process') {
    super('POLLER_LEASE_LOST', message);
    this.name = 'LeaseLostError';
  }
}

export type ErrorClass = 'transient' | 'permanent';

/**
 * The class of a failed tick, decided here only. `permanent` for `code === 'POLLER_PERMANENT'`, and for a
 * request the guarded HTTP client refused (bad URL or scheme, SSRF guard, invalid request, a body redirected
 * to another origin: `isRefusal`), so a kind that lets `ctx.http` throw gets a refused URL paused rather than
 * retried into an open breaker. Everything else is `transient`. By `code` only, never message or class.
 */
export function classifyError(err: unknown): ErrorClass {
  return codeOf(err) === 'POLLER_PERMANENT' || isRefusal(err) ? 'permanent' : 'transient';
}

export function isLeaseLost(err: unknown): boolean {
  return codeOf(err) === 'POLLER_LEASE_LOST';
}

export function hasCode(err: unknown, code: string): boolean {
  return codeOf(err) === code;
}

/**
 * A sensible default mapping of an HTTP status for kinds: `ok` for 2xx and 304, Transient for 408, 425,
 * 429 and 5xx, Permanent for every other 4xx. Kinds with finer rules (403 rate limits) decide themselves.
 */
export function classifyHttpStatus(status: number): 'ok' | ErrorClass {
  if ((status >= 200 && status < 300) || status === 304) return 'ok';
  if (status === 408 || status === 425 || status === 429 || status >= 500) return 'transient';
  if (status >= 400) return 'permanent';
  return 'transient';
}

/** `retryAfterMs` of an error, when it carries one. */
export function retryAfterOf(err: unknown): number | undefined {
  const v =
    err !== null && typeof err === 'object' ? (err as { retryAfterMs?: unknown }).retryAfterMs : undefined;
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

const URL_WITH_QUERY = /\b([a-z][a-z0-9+.-]*:\/\/[^\s?#"'<>]*)[?#][^\s"'<>]*/gi;
const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@"'<>]+@/gi;

/**
 * A short, safe reason for logs, status and alerts: URL query strings and userinfo removed, one line,
 * at most `max` characters.
 */
export function safeReason(err: unknown, max = 200): string {
  const raw = err instanceof Error ? err.message : typeof err === 'string' ? err : 'unknown error';
  let s = raw.replace(URL_WITH_QUERY, '$1').replace(USERINFO, '$1').replace(/\s+/g, ' ').trim();
  if (s.length > max) s = `${s.slice(0, max - 1)}…`;
  return s || 'unknown error';
}
