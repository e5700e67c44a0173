/** Retry timing: `retry-after` parsing and backoff with jitter (the wait itself is `sleep` of `@agent/timers`). */

/**
 * The wait a response asks for, in milliseconds, or undefined when it asks for none. Reads
 * `retry-after-ms` (OpenAI), then `retry-after` as delta-seconds or an HTTP date (RFC 9110 §10.2.3).
 */
export function retryAfterMs(
  headers: { get(name: string): string | null },
  now: () => number,
): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms !== null && /^\s*\d+(\.\d+)?\s*$/.test(ms)) return Math.ceil(Number(ms));
  const value = headers.get('retry-after');
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now());
}

export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
  random: () => number;
}

/** Delay before retry number `retry` (1-based): exponential, capped, "equal jitter" (never zero). */
export function backoffDelay(retry: number, opts: BackoffOptions): number {
  const ceiling = Math.min(opts.maxMs, opts.baseMs * 2 ** Math.min(retry - 1, 30));
  const half = ceiling / 2;
  return Math.round(half + half * opts.random());
}
