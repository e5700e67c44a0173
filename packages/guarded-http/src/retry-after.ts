/**
 * `Retry-After` (RFC 9110 §10.2.3): either delta-seconds or an HTTP-date.
 */

const DELTA_SECONDS = /^\d+$/;
// IMF-fixdate, obsolete RFC 850 and asctime forms all start with a day name.
const HTTP_DATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? /i;
// asctime carries no zone but means GMT; Date.parse would read it as local time.
const ASCTIME = /^[A-Za-z]{3} [A-Za-z]{3} [ \d]\d \d\d:\d\d:\d\d \d{4}$/;

/**
 * Milliseconds to wait according to a `Retry-After` value, relative to `now`. A date in the past
 * gives 0. Missing, empty or malformed values give `undefined` (ignore the header).
 */
export function parseRetryAfter(
  value: string | null | undefined,
  now: Date | number = Date.now(),
): number | undefined {
  if (typeof value !== 'string') return undefined;
  const v = value.trim();
  if (v === '') return undefined;
  if (DELTA_SECONDS.test(v)) {
    const seconds = Number(v);
    return Number.isSafeInteger(seconds) ? seconds * 1000 : Number.MAX_SAFE_INTEGER;
  }
  if (!HTTP_DATE.test(v)) return undefined;
  const at = Date.parse(ASCTIME.test(v) ? `${v} GMT` : v);
  if (Number.isNaN(at)) return undefined;
  const nowMs = typeof now === 'number' ? now : now.getTime();
  return Math.max(0, at - nowMs);
}

export const RETRY_AFTER_MIN_MS = 1_000;
export const RETRY_AFTER_MAX_MS = 3_600_000;

/** Clamps a wait to [min, max], by default [1 s, 1 h]. */
export function clampRetryAfter(
  ms: number,
  min: number = RETRY_AFTER_MIN_MS,
  max: number = RETRY_AFTER_MAX_MS,
): number {
  if (Number.isNaN(ms)) return min;
  return Math.min(max, Math.max(min, ms));
}
