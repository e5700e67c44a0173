/**
 * Classification of a provider API answer (Google's JSON error shape:
 * `{"error": {"code", "message", "status", "errors": [{"reason"}], "details": [{"reason"}]}}`) by status
 * code and error reason codes only, never by message text.
 */

/** Reasons that mean "slow down": a 403 with one of them is Transient, not a refusal. */
export const RATE_LIMIT_REASONS: ReadonlySet<string> = new Set([
  'rateLimitExceeded',
  'userRateLimitExceeded',
  'quotaExceeded',
  'dailyLimitExceeded',
  'RATE_LIMIT_EXCEEDED',
  'RESOURCE_EXHAUSTED',
]);

export interface ApiErrorClassification {
  errorClass: 'transient' | 'permanent';
  status: number;
  /** Reason codes found in the body (`errors[].reason`, `details[].reason`, `status`), safe to log. */
  reasons: string[];
}

const REASON = /^[A-Za-z0-9_.-]{1,64}$/;

/** Reason codes of a Google-style JSON error body; `[]` for anything else. */
export function apiErrorReasons(body: string): string[] {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return [];
  }
  const err = json && typeof json === 'object' ? (json as { error?: unknown }).error : undefined;
  if (!err || typeof err !== 'object') return [];
  const e = err as { errors?: unknown; details?: unknown; status?: unknown };
  const out: string[] = [];
  for (const list of [e.errors, e.details])
    if (Array.isArray(list))
      for (const x of list) {
        const r = x && typeof x === 'object' ? (x as { reason?: unknown }).reason : undefined;
        if (typeof r === 'string' && REASON.test(r)) out.push(r);
      }
  if (typeof e.status === 'string' && REASON.test(e.status)) out.push(e.status);
  return [...new Set(out)];
}

/**
 * `null` for 2xx/3xx. 408, 429, 5xx and 403 with a rate-limit reason are Transient; every other 4xx
 * (401 included: `request` already refreshed once) is Permanent.
 */
export function classifyApiError(status: number, body: string): ApiErrorClassification | null {
  if (status < 400) return null;
  const reasons = apiErrorReasons(body);
  const transient =
    status >= 500 ||
    status === 408 ||
    status === 429 ||
    (status === 403 && reasons.some((r) => RATE_LIMIT_REASONS.has(r)));
  return { errorClass: transient ? 'transient' : 'permanent', status, reasons };
}
