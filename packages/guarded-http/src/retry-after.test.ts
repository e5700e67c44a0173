import { describe, expect, it } from 'vitest';
import { clampRetryAfter, parseRetryAfter, RETRY_AFTER_MAX_MS, RETRY_AFTER_MIN_MS } from './retry-after.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');

describe('parseRetryAfter', () => {
  it.each([
    ['120', 120_000],
    ['0', 0],
    [' 5 ', 5_000],
    ['86400', 86_400_000],
  ])('delta-seconds %j -> %d ms', (value, ms) => {
    expect(parseRetryAfter(value, NOW)).toBe(ms);
  });

  it.each([
    ['Sun, 01 Mar 2026 12:01:30 GMT', 90_000], // IMF-fixdate
    ['Sunday, 01-Mar-26 12:02:00 GMT', 120_000], // RFC 850
    ['Sun Mar  1 12:00:10 2026', 10_000], // asctime, which means GMT whatever the local zone
  ])('HTTP-date %j', (value, ms) => {
    expect(parseRetryAfter(value, NOW)).toBe(ms);
  });

  it('accepts a Date as now', () => {
    expect(parseRetryAfter('Sun, 01 Mar 2026 12:00:05 GMT', new Date(NOW))).toBe(5_000);
  });

  it('gives 0 for a date in the past', () => {
    expect(parseRetryAfter('Sun, 01 Mar 2026 11:00:00 GMT', NOW)).toBe(0);
  });

  it.each([
    undefined,
    null,
    '',
    '   ',
    '-5',
    '1.5',
    '12abc',
    'soon',
    'Funday, 99 Foo 2026',
    'Sun, 99 Mar 2026 99:99:99 GMT',
  ])('ignores %j', (value) => {
    expect(parseRetryAfter(value as string | undefined, NOW)).toBeUndefined();
  });

  it('does not overflow on absurd deltas', () => {
    expect(parseRetryAfter('99999999999999999999999', NOW)).toBe(Number.MAX_SAFE_INTEGER);
  });
});

describe('clampRetryAfter', () => {
  it('clamps to [1 s, 1 h] by default', () => {
    expect(clampRetryAfter(0)).toBe(RETRY_AFTER_MIN_MS);
    expect(clampRetryAfter(500)).toBe(1_000);
    expect(clampRetryAfter(120_000)).toBe(120_000);
    expect(clampRetryAfter(2 * 86_400_000)).toBe(RETRY_AFTER_MAX_MS);
    expect(clampRetryAfter(Number.NaN)).toBe(1_000);
  });

  it('takes explicit bounds', () => {
    expect(clampRetryAfter(10, 100, 200)).toBe(100);
    expect(clampRetryAfter(1_000, 100, 200)).toBe(200);
  });
});
