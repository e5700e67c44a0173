/** Errors raised by model clients; callers branch on `code`, never on the message. */

export type ModelErrorCode =
  | 'MODEL_CONFIG_INVALID'
  | 'MODEL_BAD_REQUEST'
  | 'MODEL_AUTH'
  | 'MODEL_RATE_LIMITED'
  | 'MODEL_UNAVAILABLE'
  | 'MODEL_TIMEOUT'
  | 'MODEL_BAD_RESPONSE'
  | 'MODEL_ABORTED'
  | 'MODEL_CLIENT_RETIRED';

export const MODEL_ERROR_CODES: readonly ModelErrorCode[] = [
  'MODEL_CONFIG_INVALID',
  'MODEL_BAD_REQUEST',
  'MODEL_AUTH',
  'MODEL_RATE_LIMITED',
  'MODEL_UNAVAILABLE',
  'MODEL_TIMEOUT',
  'MODEL_BAD_RESPONSE',
  'MODEL_ABORTED',
  'MODEL_CLIENT_RETIRED',
];

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
  return (
    value instanceof Error &&
    typeof code === 'string' &&
    (MODEL_ERROR_CODES as readonly string[]).includes(code)
  );
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
