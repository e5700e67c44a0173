/** Errors raised by model clients; callers branch on `code`, never on the message. */

/** What one code means and what to do about it. */
export interface ModelErrorInfo {
  readonly meaning: string;
  readonly action: string;
}

export const MODEL_ERROR_CODES = {
  MODEL_CONFIG_INVALID: {
    meaning:
      'The provider entry is unusable (type, base_url, empty api_key, timeout_ms, max_retries); the message names the field.',
    action: 'Fix `llm.yaml` and reload.',
  },
  MODEL_BAD_REQUEST: {
    meaning:
      'The provider refused the request (400, 404, 413, 422, …), or the request was invalid before sending. Not retried.',
    action: 'Check the model name, messages and tool schemas.',
  },
  MODEL_AUTH: {
    meaning: 'The provider answered 401 or 403: the api key is wrong, revoked, or lacks access.',
    action: "Check `providers.<name>.api_key` (and the account's access), then reload.",
  },
  MODEL_RATE_LIMITED: {
    meaning:
      'The provider answered 429 after all retries, or asked (`retry-after`) for a wait longer than `maxRetryAfterMs`.',
    action: "Try later (`retryAfterMs` says when), or raise the account's limits.",
  },
  MODEL_UNAVAILABLE: {
    meaning: '5xx answers or network errors after all retries.',
    action: "Check `base_url` and the provider's status.",
  },
  MODEL_TIMEOUT: {
    meaning: 'Every attempt ran over `timeout_ms` (or the server answered 408).',
    action: 'Try again, or raise `timeout_ms`.',
  },
  MODEL_BAD_RESPONSE: {
    meaning: "A 2xx body that is not JSON, not the API's shape, or over `maxResponseBytes`.",
    action: 'Check that `base_url` points at the right kind of API.',
  },
  MODEL_ABORTED: {
    meaning: "The caller's signal aborted the call.",
    action: 'Nothing: the caller asked for it.',
  },
  MODEL_CLIENT_RETIRED: {
    meaning: 'The client was retired: a new call was refused, or a call was aborted at the retire deadline.',
    action: 'Use the client of the current snapshot; start the turn again.',
  },
} as const satisfies Record<string, ModelErrorInfo>;

export type ModelErrorCode = keyof typeof MODEL_ERROR_CODES;

export interface ModelErrorDetails {
  provider?: string;
  /** HTTP status of the last answer, when there was one. */
  status?: number;
  /** HTTP attempts made before giving up. */
  attempts?: number;
  /** The wait the provider asked for (from `retry-after`), when it was too long to honour. */
  retryAfterMs?: number;
  cause?: unknown;
}

export class ModelError extends Error {
  override readonly name = 'ModelError';
  readonly code: ModelErrorCode;
  readonly provider: string | undefined;
  readonly status: number | undefined;
  readonly attempts: number | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(code: ModelErrorCode, message: string, details: ModelErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.provider = details.provider;
    this.status = details.status;
    this.attempts = details.attempts;
    this.retryAfterMs = details.retryAfterMs;
  }
}

/** True for a `ModelError`, also one from another copy of this package (checks the code). */
export function isModelError(value: unknown): value is ModelError {
  if (typeof value !== 'object' || value === null) return false;
  const code = (value as { code?: unknown }).code;
  return value instanceof Error && typeof code === 'string' && Object.hasOwn(MODEL_ERROR_CODES, code);
}

// Vendors echo keys back in auth errors, sometimes partly masked ("sk-abc1***xyz9"); such tokens are
// dropped even when they are not exactly our key.
const KEY_LIKE = /\b(?:sk|pk|rk)[-_][A-Za-z0-9_*.-]{4,}/g;

/** Removes the api key (and anything shaped like a key) from text that came from the network. */
export function redactSecret(text: string, secret: string): string {
  let out = text;
  if (secret.length > 0) out = out.split(secret).join('[redacted]');
  return out.replace(KEY_LIKE, '[redacted]');
}
