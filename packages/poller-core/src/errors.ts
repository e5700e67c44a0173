/**
 * Error classes with stable `code`s. The runner recognises errors by `code`, never by `instanceof`,
 * so a kind built against another copy of this package is classified the same way.
 */

/** The `code` of an error-like value when it is a string. */
function codeOf(err: unknown): string | undefined {
  const c = err !== null && typeof err === 'object' ? (err as { code?: unknown }).code : undefined;
  return typeof c === 'string' ? c : undefined;
}

/** What one error code means and what the operator (or the kind's author) does about it. */
export interface PollerErrorInfo {
  readonly meaning: string;
  readonly action: string;
}

export const POLLER_ERROR_CODES = {
  POLLER_TRANSIENT: {
    meaning:
      'A tick failed in a way that may pass (network, 5xx, 429, timeout, a body that does not parse). Retried with backoff; counts toward the breaker.',
    action: 'Nothing at first. If the breaker opens, read `last_error` in `agent pollers show <id>`.',
  },
  POLLER_PERMANENT: {
    meaning:
      'A tick failed in a way retrying will not fix (401 after a token refresh, a revoked grant, 404, 410, a URL the HTTP guard refuses). The job is paused and an alert sent.',
    action:
      'Fix the cause named in the alert (credentials, URL), then `agent pollers resume <id>`; for a calendar 410, `reset` first.',
  },
  POLLER_LEASE_LOST: {
    meaning:
      'This process no longer holds the job lease (another holder took over, or the job was replaced or removed); its state writes are refused.',
    action: 'Nothing: the other holder continues. If it happens often, raise `lease_ttl_factor`.',
  },
  POLLER_UNKNOWN_JOB: {
    meaning: 'No job with this id is loaded (or, for an agent tool, the job belongs to another agent).',
    action: 'List the jobs with `agent pollers list`.',
  },
  POLLER_INVALID_KIND: {
    meaning: 'A kind definition is malformed (name, apiVersion, schema, tick, tool names).',
    action:
      "Kind author: fix the definition the message names; operator: upgrade or remove the kind's package.",
  },
  POLLER_NOT_A_KIND: {
    meaning:
      'A value given to the registry, or exported by a kind package, was not made by `definePollerKind`.',
    action: 'Kind author: export a kind built with `definePollerKind`.',
  },
  POLLER_DUPLICATE_KIND: {
    meaning: 'Two kinds share one name.',
    action: 'Remove one of the packages from `kind_packages` in `pollers.yaml`.',
  },
  POLLER_KIND_API_VERSION: {
    meaning: 'A kind was built for another plugin API version.',
    action: 'Upgrade the kind package, or the daemon, so that both speak the same version.',
  },
  POLLER_KIND_PACKAGE: {
    meaning:
      'A kind package could not be loaded, or exports no kind. Only the jobs of its kinds are rejected.',
    action: 'Install the package where the config directory can resolve it, and check its exports.',
  },
  POLLER_UNKNOWN_KIND: {
    meaning: 'A job names a kind that is not registered.',
    action: "Fix the job's `kind`, or add the kind's package to `kind_packages`.",
  },
  POLLER_INVALID_CONFIG: {
    meaning: "A job's `config` does not match its kind's schema, or fails the kind's checks.",
    action: 'Fix the field the located message names.',
  },
  POLLER_BAD_TEMPLATE: {
    meaning: 'A `message_template` has a syntax error or an unknown placeholder.',
    action: 'Use the placeholders the message lists; write `{{` and `}}` for literal braces.',
  },
  POLLER_BAD_SCHEDULE: {
    meaning:
      'A schedule is invalid: not 6 cron fields, an unknown `tz`, a cron that never fires, or a bad `at` instant.',
    action: 'Fix the schedule as the message says.',
  },
  POLLER_UNKNOWN_AGENT: {
    meaning: 'A job names an agent that does not exist.',
    action: "Fix the job's `agent`, or add `agents.d/<agent>.yaml`.",
  },
  POLLER_NO_BINDING: {
    meaning:
      "The job's agent has no inbound binding for a channel the job delivers to (`deliver` or `failure_to`).",
    action: 'Add the binding to the agent, or deliver on a channel it has.',
  },
  POLLER_NO_CREDENTIALS: {
    meaning: "The job's agent has no account for the credentials the kind needs.",
    action: 'Add `credentials` to the agent and the account to `plugins/<kind>.yaml`.',
  },
  POLLER_CONFIRM_REQUIRED: {
    meaning: 'A destructive operation (reset) was called without confirmation.',
    action: 'Call it again with `confirm: true` (CLI: `--yes`).',
  },
  POLLER_STOPPED: {
    meaning: 'The poller service is stopped (daemon shutdown).',
    action: 'Start the daemon again.',
  },
  POLLER_STATE_DB: {
    meaning: 'The state database could not be opened, put in WAL mode or migrated.',
    action: 'Put `state_db` on a local, writable disk; the message says which step failed.',
  },
  POLLER_STATE_STORE: {
    meaning:
      'A state store call failed (disk full, I/O error, busy past its timeout, read-only). The tick counts as Transient and is retried with backoff.',
    action: 'Free space or fix the disk; the jobs retry and recover by themselves.',
  },
} as const satisfies Record<string, PollerErrorInfo>;

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

export type ErrorClass = 'transient' | 'permanent';

/**
 * The class of a failed tick, decided here only. `permanent` for `code === 'POLLER_PERMANENT'`, and for a
 * request the guarded HTTP client refused (bad URL or scheme, SSRF guard, invalid request, a body redirected
 * to another origin: its errors carry `refused: true`), so a kind that lets `ctx.http` throw gets a refused
 * URL paused rather than retried into an open breaker. Everything else is `transient`. By the error's fields
 * only, never its message or class, so errors of another copy of a package count the same.
 */
export function classifyError(err: unknown): ErrorClass {
  const refused = err !== null && typeof err === 'object' && (err as { refused?: unknown }).refused === true;
  return codeOf(err) === 'POLLER_PERMANENT' || refused ? 'permanent' : 'transient';
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
