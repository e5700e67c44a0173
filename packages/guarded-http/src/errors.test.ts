import { describe, expect, it } from 'vitest';
import { createGuardedHttp } from './client.js';
import { codeOf, GUARDED_HTTP_ERROR_CODES, GuardedHttpError, isRefusal } from './errors.js';

describe('isRefusal', () => {
  it('is true exactly for the codes that mean the request itself must change', () => {
    const refused = Object.keys(GUARDED_HTTP_ERROR_CODES).filter((c) =>
      isRefusal(new GuardedHttpError(c as keyof typeof GUARDED_HTTP_ERROR_CODES, 'x')),
    );
    expect(refused.sort()).toEqual([
      'HTTP_BAD_SCHEME',
      'HTTP_BAD_URL',
      'HTTP_INVALID_REQUEST',
      'HTTP_REDIRECT_REFUSED',
      'HTTP_SSRF_BLOCKED',
    ]);
  });

  it('goes by code alone: a copy of the error from another package version counts, a message does not', () => {
    expect(isRefusal({ code: 'HTTP_SSRF_BLOCKED' })).toBe(true);
    expect(isRefusal(Object.assign(new Error('refused by the SSRF guard'), { code: 'HTTP_NETWORK' }))).toBe(
      false,
    );
    expect(isRefusal(new Error('HTTP_SSRF_BLOCKED'))).toBe(false);
    expect(isRefusal({ code: 'toString' })).toBe(false);
    expect(isRefusal(null)).toBe(false);
    expect(isRefusal('HTTP_BAD_URL')).toBe(false);
  });

  it('answers for what the client really throws', async () => {
    const http = createGuardedHttp();
    try {
      const scheme = await http.request('ftp://example.com/x').catch((e: unknown) => e);
      expect(codeOf(scheme)).toBe('HTTP_BAD_SCHEME');
      expect(isRefusal(scheme)).toBe(true);
      const ssrf = await http.request('http://127.0.0.1:9/x').catch((e: unknown) => e);
      expect(codeOf(ssrf)).toBe('HTTP_SSRF_BLOCKED');
      expect(isRefusal(ssrf)).toBe(true);
    } finally {
      await http.close();
    }
    const closed = await http.request('https://example.com/').catch((e: unknown) => e);
    expect(codeOf(closed)).toBe('HTTP_CLOSED');
    expect(isRefusal(closed)).toBe(false);
  });

  it('every code has a meaning and an action', () => {
    for (const [code, info] of Object.entries(GUARDED_HTTP_ERROR_CODES)) {
      expect(info.meaning.length, code).toBeGreaterThan(10);
      expect(info.action.length, code).toBeGreaterThan(5);
    }
  });
});

describe('codeOf', () => {
  it('is the string code of anything error-like, else undefined', () => {
    expect(codeOf(new GuardedHttpError('HTTP_TIMEOUT', 't'))).toBe('HTTP_TIMEOUT');
    expect(codeOf({ code: 42 })).toBeUndefined();
    expect(codeOf(undefined)).toBeUndefined();
    expect(codeOf('HTTP_TIMEOUT')).toBeUndefined();
  });
});
