import { describe, expect, it } from 'vitest';
import { backoffDelay, retryAfterMs } from './retry.js';

const headers = (h: Record<string, string>) => new Headers(h);
const NOW = Date.parse('2026-03-01T12:00:00Z');

describe('retryAfterMs', () => {
  it('reads delta-seconds', () => {
    expect(retryAfterMs(headers({ 'retry-after': '3' }), () => NOW)).toBe(3000);
    expect(retryAfterMs(headers({ 'retry-after': ' 0.5 ' }), () => NOW)).toBe(500);
  });

  it('reads an HTTP date relative to the injected clock', () => {
    const h = headers({ 'retry-after': 'Sun, 01 Mar 2026 12:00:07 GMT' });
    expect(retryAfterMs(h, () => NOW)).toBe(7000);
    expect(retryAfterMs(h, () => NOW + 60_000)).toBe(0);
  });

  it('prefers retry-after-ms', () => {
    expect(retryAfterMs(headers({ 'retry-after-ms': '250', 'retry-after': '9' }), () => NOW)).toBe(250);
  });

  it('ignores absent or unreadable values', () => {
    expect(retryAfterMs(headers({}), () => NOW)).toBeUndefined();
    expect(retryAfterMs(headers({ 'retry-after': 'soon' }), () => NOW)).toBeUndefined();
  });
});

describe('backoffDelay', () => {
  const opts = { baseMs: 500, maxMs: 8000 };
  it('doubles per retry with equal jitter and stays under the cap', () => {
    expect(backoffDelay(1, { ...opts, random: () => 0 })).toBe(250);
    expect(backoffDelay(1, { ...opts, random: () => 0.999999 })).toBe(500);
    expect(backoffDelay(3, { ...opts, random: () => 0 })).toBe(1000);
    expect(backoffDelay(20, { ...opts, random: () => 0.999999 })).toBe(8000);
    expect(backoffDelay(20, { ...opts, random: () => 0 })).toBe(4000);
  });
});
